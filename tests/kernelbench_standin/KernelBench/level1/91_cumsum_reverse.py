"""The project's small stand-in for KernelBench level 1's 91_cumsum_reverse.py, used by CI.

Model(dim) sums from the far end: reversing x along `dim`, taking torch.cumsum there and reversing
the result gives, at each position, the sum of that input element and every one after it.
get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, *input_shape), as the real
problem does, only smaller here.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Suffix sum along a fixed dimension."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        backwards = torch.flip(x, dims=(self.dim,))
        return torch.flip(torch.cumsum(backwards, dim=self.dim), dims=(self.dim,))


batch_size = 48
input_shape = (2100,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
