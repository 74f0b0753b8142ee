"""This project's own small stand-in for KernelBench level 1, problem 17 (A times B transposed).

CI gates candidate_kb_matmul_transposed_b.py against it on the CPU. B arrives as (N, K), its
rows being the columns of the right factor; forward(A, B) returns A @ B.T, of shape (M, N), for
A of shape (M, K). get_inputs() draws A, then B, uniformly from [0, 1).
"""
import torch
from torch import nn


class Model(nn.Module):
    """Matrix product with the second operand stored transposed."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return A @ B.T


M = 64
K = 256
N = 128


def get_inputs():
    left = torch.rand(M, K)
    right_rows = torch.rand(N, K)
    return [left, right_rows]


def get_init_inputs():
    return []
