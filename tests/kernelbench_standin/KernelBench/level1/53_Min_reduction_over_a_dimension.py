"""The project's CI stand-in for KernelBench level 1's 53_Min_reduction_over_a_dimension.py, at small sizes.

Model(dim) returns the values half of torch.min(x, dim): the smallest element along `dim` for
every position of the other dimensions, `dim` removed from the shape (no keepdim). get_init_inputs()
fixes dim to 1; get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, dim1, dim2).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Minimum values along a fixed dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, _ = torch.min(x, dim=self.dim)
        return values


batch_size = 8
dim1 = 96
dim2 = 95


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
