"""The project's small stand-in for KernelBench level 1's 23_Softmax.py, used by CI.

Model() returns torch.softmax(x, dim=1): every row exponentiated and divided by its own sum, so
each output row is positive and adds up to one. get_inputs() draws one uniform [0, 1) tensor of
shape (batch_size, dim), as the real problem does, only smaller here.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Softmax over the second dimension of a 2-D input."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
