"""The project's CI stand-in for KernelBench level 1's 38_L1Norm_.py, at small sizes.

Each row of a 2-D input is divided by the MEAN of its absolute values along dim 1 (kept as a
column, so it broadcasts back over the row), not by their sum. The Model has no parameters;
get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, dim).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Divides each row by its mean absolute value."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.abs().mean(dim=1, keepdim=True)


batch_size = 48
dim = 1500


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
