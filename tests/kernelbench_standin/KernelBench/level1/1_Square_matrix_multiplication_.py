"""The project's CI stand-in for KernelBench level 1 problem 1 (square matrix product).

forward(A, B) returns the ordinary matrix product of two N x N float32 matrices. N is small here,
so CI can gate examples/kernelbench/candidate_kb_square_matmul.py on the CPU; the size constant's
name and the random calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """No parameters: the output is A @ B, an N x N matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 128


def get_inputs():
    # Two uniform [0, 1) matrices, A drawn before B.
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
