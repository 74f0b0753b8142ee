"""The project's CI stand-in for KernelBench level 1 problem 4 (matrix times column vector).

forward(A, B) multiplies an (M, K) float32 matrix by a (K, 1) column, giving the (M, 1) column of
row dot products. The sizes are small here, so CI can gate
examples/kernelbench/candidate_kb_matvec.py on the CPU; the size constants' names and the random
calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """No parameters: the output is torch.matmul(A, B), an (M, 1) column."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 48
K = 2000


def get_inputs():
    # Uniform [0, 1) operands: the matrix first, then the column.
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]


def get_init_inputs():
    return []
