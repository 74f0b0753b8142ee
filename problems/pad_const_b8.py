"""pad_const_b8: constant-fill pad of 8-byte elements (float64, int64), any rank 1..8.

Official reference for the pad_const_b8 substrate, in KernelBench's problem format. Unlike
torch.nn.functional.pad, the pads arrive as an input, axis 0 first, so one problem covers
every rank and every pad; the fill arrives as a 0-dim tensor of x's dtype, so its exact bit
pattern (a NaN payload, -0.0) is part of the problem. Every dtype of the width must come out
bit for bit.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i] = x[i - left] where every axis's coordinate falls inside x, else value."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, pads: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        # pads: int64 (rank, 2), row d = (left, right) pad of axis d; value: 0-dim, x's dtype.
        pad_list = pads.tolist()
        out_shape = [n + left + right for n, (left, right) in zip(x.shape, pad_list)]
        out = value.reshape([1] * x.dim()).expand(out_shape).contiguous()
        interior = tuple(slice(left, left + n) for n, (left, _right) in zip(x.shape, pad_list))
        out[interior] = x
        return out


def get_inputs():
    x = torch.randn(8, 64, 128, 128, dtype=torch.float64)
    pads = torch.tensor([[1, 2], [0, 3], [5, 4], [3, 6]], dtype=torch.int64)
    value = torch.tensor(-1.5, dtype=torch.float64)
    return [x, pads, value]


def get_init_inputs():
    return []
