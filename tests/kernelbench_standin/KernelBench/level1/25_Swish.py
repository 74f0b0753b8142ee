"""The project's small stand-in for KernelBench level 1's 25_Swish.py, used by CI.

Model() applies Swish (also called SiLU) element by element: x times the logistic sigmoid of x,
the output shaped like the input. get_inputs() draws one uniform [0, 1) tensor of shape
(batch_size, dim), as the real problem does, only smaller here.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Element-wise x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


batch_size = 16
dim = 4096


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
