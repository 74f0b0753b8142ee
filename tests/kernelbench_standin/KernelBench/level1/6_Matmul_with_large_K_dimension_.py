"""The project's CI stand-in for KernelBench level 1 problem 6 (matrix product, long shared dimension).

forward(A, B) multiplies an (M, K) float32 matrix by a (K, N) one, K much larger than M and N.
The sizes are small here, so CI can gate examples/kernelbench/candidate_kb_matmul_large_k.py on
the CPU; the size constants' names and the random calls of get_inputs() are the ones the real
problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """No parameters: the output is A @ B, of shape (M, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8
N = 8
K = 8300


def get_inputs():
    # Uniform [0, 1) operands, A (M x K) drawn before B (K x N).
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
