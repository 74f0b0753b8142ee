"""pad_backward_const_b8: gradient of constant pad for 8-byte elements (float64, int64), any rank 1..8.

Official reference for the pad_backward_const_b8 substrate, in KernelBench's problem format.
Constant pad puts each input element at exactly one output position and fills the rest with
the constant, so the gradient with respect to the input is grad_out with the pad slots cut
away: a slice, no accumulation. The pads arrive as an input, axis 0 first, as for pad_const;
grad_in has grad_out's shape minus both pads on every axis. Every dtype of the width must
come out bit for bit.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """grad_in[i] = grad_out[i + left] on every axis."""

    def __init__(self):
        super().__init__()

    def forward(self, grad_out: torch.Tensor, pads: torch.Tensor) -> torch.Tensor:
        # pads: int64 (rank, 2), row d = (left, right) pad of axis d of the forward pad.
        pad_list = pads.tolist()
        interior = tuple(slice(left, n - right) for n, (left, right) in zip(grad_out.shape, pad_list))
        return grad_out[interior].contiguous()


def get_inputs():
    # The gradient of a (4, 16, 128, 128) tensor padded as pad_const's T0 pads it.
    grad_out = torch.randn(7, 19, 137, 137, dtype=torch.float64)
    pads = torch.tensor([[1, 2], [0, 3], [5, 4], [3, 6]], dtype=torch.int64)
    return [grad_out, pads]


def get_init_inputs():
    return []
