"""The project's CI stand-in for KernelBench level 1's 37_FrobeniusNorm_.py, at small sizes.

The whole input is divided by its Frobenius norm: the square root of the sum of squares of every
element, one 0-dim value for the entire tensor whatever its rank. The Model has no parameters;
get_inputs() draws one uniform [0, 1) tensor of shape (batch, features, dim1, dim2).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales a tensor to unit Frobenius norm."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.linalg.vector_norm(x)


batch_size = 4
features = 6
dim1 = 30
dim2 = 39


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return []
