"""The project's small stand-in for KernelBench level 1's 24_LogSoftmax.py, used by CI.

Model(dim=1) returns torch.log_softmax(x, dim): the logarithm of the softmax along `dim`, that is
x minus the log of the sum of exp over that dimension. get_inputs() draws one uniform [0, 1)
tensor of shape (batch_size, dim), as the real problem does, only smaller here; as there, the
module's `dim` is the row length, not the Model's dimension argument.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Log-softmax along a dimension chosen at construction (1 by default)."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 16
dim = 6000


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
