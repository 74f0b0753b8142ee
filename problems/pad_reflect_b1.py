"""pad_reflect_b1: reflect pad (edge not repeated) of 1-byte elements (uint8, int8), any rank 1..8.

Official reference for the pad_reflect_b1 substrate, in KernelBench's problem format. Unlike
torch.nn.functional.pad, whose reflect mode pads only the last one to three axes of a 2-D to
5-D input, this pads every axis of any rank 1..8: the pads arrive as an input, axis 0 first,
and each axis has its own mirror index map, the maps gathered together as one outer product.
Every pad must be at most the axis's extent minus one (the kernel's precondition; a wider one is
refused). Every dtype of the width must come out bit for bit.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[o] = x[m(o - left)] on every axis, m(i) = -i below 0, 2*(n-1) - i past n-1, else i."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, pads: torch.Tensor) -> torch.Tensor:
        # pads: int64 (rank, 2), row d = (left, right) pad of axis d, each at most x.shape[d] - 1.
        index = []
        for axis, (left, right) in enumerate(pads.tolist()):
            n = x.shape[axis]
            if (left > 0 or right > 0) and max(left, right) > n - 1:
                raise ValueError(f"axis {axis}: reflect pads ({left}, {right}) exceed dim - 1 = {n - 1}")
            i = torch.arange(-left, n + right, dtype=torch.int64, device=x.device)
            i = torch.where(i < 0, -i, torch.where(i >= n, 2 * (n - 1) - i, i))
            # Shaped to run along this axis only: x[index] gathers the outer product of the maps.
            index.append(i.reshape([-1 if d == axis else 1 for d in range(x.dim())]))
        return x[tuple(index)]


def get_inputs():
    x = torch.randint(0, 256, (4, 32, 96, 96), dtype=torch.uint8)
    pads = torch.tensor([[1, 2], [0, 3], [5, 4], [3, 6]], dtype=torch.int64)
    return [x, pads]


def get_init_inputs():
    return []
