"""The project's small stand-in for KernelBench level 1's 89_cumsum.py, used by CI.

Model(dim) returns torch.cumsum(x, dim): along `dim`, each output element is the sum of the input
elements up to and including its own position. get_inputs() draws one uniform [0, 1) tensor of
shape (batch_size, *input_shape), as the real problem does, only smaller here.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Inclusive prefix sum along a fixed dimension."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


batch_size = 48
input_shape = (2100,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
