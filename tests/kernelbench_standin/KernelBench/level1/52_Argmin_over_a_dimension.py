"""The project's CI stand-in for KernelBench level 1's 52_Argmin_over_a_dimension.py, at small sizes.

Model(dim) returns torch.argmin(x, dim): for every position of the other dimensions, the int64
index along `dim` of the smallest element (the lowest such index on ties), with `dim` removed from
the shape. get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, dim1, dim2).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Index of the minimum along a fixed dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmin(x, dim=self.dim)


batch_size = 8
dim1 = 96
dim2 = 95
dim = 1


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [dim]
