"""This project's own small stand-in for KernelBench level 1, problem 5 (matrix times a scalar).

CI gates candidate_kb_matrix_scalar.py against it on the CPU. forward(A, s) scales every entry
of the (M, N) matrix A by the Python number s; the result has A's shape. get_inputs() draws A
uniformly from [0, 1) and uses s = 3.14.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Multiplies a matrix by a scalar, entry by entry."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return A * s


M = 64
N = 256


def get_inputs():
    matrix = torch.rand(M, N)
    return [matrix, 3.14]


def get_init_inputs():
    return []
