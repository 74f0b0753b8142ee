"""The project's CI stand-in for KernelBench level 1's 47_Sum_reduction_over_a_dimension.py, at small sizes.

Model(dim) returns torch.sum(x, dim, keepdim=True): the reduced dimension stays in the output with
size 1. get_init_inputs() passes reduce_dim (1); get_inputs() draws one uniform [0, 1) tensor of
shape (batch_size, dim1, dim2).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum along a fixed dimension, keeping it as a size-1 dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 8
dim1 = 64
dim2 = 63
reduce_dim = 1


def get_inputs():
    return [torch.rand(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
