"""The project's CI stand-in for KernelBench level 1's 39_L2Norm_.py, at small sizes.

Each row of a 2-D input is divided by its Euclidean length along dim 1 (the square root of the sum
of its squares, kept as a column so it broadcasts back over the row). The Model has no parameters;
get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, dim).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales every row to unit 2-norm."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.linalg.vector_norm(x, ord=2, dim=1, keepdim=True)


batch_size = 32
dim = 4095


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
