"""The project's small stand-in for KernelBench level 1's 92_cumsum_exclusive.py, used by CI.

Model(dim) is an exclusive prefix sum along `dim` with the input's shape: position 0 holds zero and
position i the sum of input positions 0 .. i-1, so the last input element never contributes. It
is built as torch.cumsum over all but the last slice, with a zero slice put in front.
get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, *input_shape), as the real
problem does, only smaller here.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Exclusive prefix sum along a fixed dimension (output shaped like the input)."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        n = x.shape[self.dim]
        leading = torch.cumsum(x.narrow(self.dim, 0, n - 1), dim=self.dim)
        zero_slice = torch.zeros_like(x.narrow(self.dim, 0, 1))
        return torch.cat([zero_slice, leading], dim=self.dim)


batch_size = 48
input_shape = (2100,)
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape)]


def get_init_inputs():
    return [dim]
