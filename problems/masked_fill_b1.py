"""masked_fill_b1: masked fill of 1-byte elements (uint8, int8), any shape.

Official reference for the masked_fill_b1 substrate, in KernelBench's problem format.
The mask is torch.bool and has x's shape (the kernel never broadcasts); the fill arrives as a
0-dim tensor of x's dtype, so its exact bit pattern (a NaN payload, -0.0) is part of the
problem. torch.where is used rather than Tensor.masked_fill: masked_fill takes a tensor value
through a Scalar (a double), which quiets a signalling NaN of float16, bfloat16 or float32.
Every dtype of the width must come out bit for bit.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i] = value where mask[i], else x[i]."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, mask: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        # mask: torch.bool, x's shape; value: 0-dim, x's dtype.
        return torch.where(mask, value, x)


def get_inputs():
    # Attention scores of 4 sequences, 8 heads, 256 positions, with masked positions set.
    x = torch.randint(0, 256, (4, 8, 256, 256), dtype=torch.uint8)
    mask = torch.rand(4, 8, 256, 256) < 0.5
    value = torch.tensor(0x5A, dtype=torch.uint8)
    return [x, mask, value]


def get_init_inputs():
    return []
