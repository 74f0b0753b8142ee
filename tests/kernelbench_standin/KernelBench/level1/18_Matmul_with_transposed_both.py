"""This project's own small stand-in for KernelBench level 1, problem 18 (both operands transposed).

CI gates candidate_kb_matmul_transposed_both.py against it on the CPU. A arrives as (K, M) and B
as (N, K); forward(A, B) returns A.T @ B.T, of shape (M, N). get_inputs() draws A, then B,
uniformly from [0, 1).
"""
import torch
from torch import nn


class Model(nn.Module):
    """Matrix product of the transposes of both operands."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return A.T @ B.T


M = 64
K = 256
N = 128


def get_inputs():
    left_t = torch.rand(K, M)
    right_t = torch.rand(N, K)
    return [left_t, right_t]


def get_init_inputs():
    return []
