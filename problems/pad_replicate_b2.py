"""pad_replicate_b2: replicate (edge-repeat) pad of 2-byte elements (float16, bfloat16, int16), any rank 1..8.

Official reference for the pad_replicate_b2 substrate, in KernelBench's problem format. Unlike
torch.nn.functional.pad, whose replicate mode pads only the last one to three axes of a 2-D to
5-D input, this pads every axis of any rank 1..8: the pads arrive as an input, axis 0 first,
and each axis has its own clamped index map, the maps gathered together as one outer product,
so a pad may be any width (but an empty axis, having no edge element to repeat, takes only zero
pads). Every dtype of the width must come out bit for bit.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[o] = x[clamp(o - left, 0, n - 1)] on every axis."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, pads: torch.Tensor) -> torch.Tensor:
        # pads: int64 (rank, 2), row d = (left, right) pad of axis d, any width (0 on an empty axis).
        index = []
        for axis, (left, right) in enumerate(pads.tolist()):
            n = x.shape[axis]
            if n == 0 and (left > 0 or right > 0):
                raise ValueError(f"axis {axis}: replicate pads ({left}, {right}) on an empty axis")
            i = torch.arange(-left, n + right, dtype=torch.int64, device=x.device).clamp(0, n - 1)
            # Shaped to run along this axis only: x[index] gathers the outer product of the maps.
            index.append(i.reshape([-1 if d == axis else 1 for d in range(x.dim())]))
        return x[tuple(index)]


def get_inputs():
    x = torch.randn(4, 32, 96, 96, dtype=torch.float16)
    pads = torch.tensor([[1, 2], [0, 3], [5, 4], [3, 6]], dtype=torch.int64)
    return [x, pads]


def get_init_inputs():
    return []
