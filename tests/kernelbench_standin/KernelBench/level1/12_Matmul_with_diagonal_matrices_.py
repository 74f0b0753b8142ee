"""This project's own small stand-in for KernelBench level 1, problem 12 (diagonal matrix times matrix).

CI gates candidate_kb_diag_matmul.py against it on the CPU. A (N,) holds the diagonal of an
N x N matrix and B is (N, M); forward(A, B) forms diag(A) @ B without building the diagonal
matrix, as the broadcast product A[:, None] * B: row r of B scaled by A[r]. get_inputs() draws A,
then B, uniformly from [0, 1).
"""
import torch
from torch import nn


class Model(nn.Module):
    """Scales each row of B by the matching entry of the diagonal A."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A.unsqueeze(1) * B


M = 256
N = 192


def get_inputs():
    diagonal = torch.rand(N)
    matrix = torch.rand(N, M)
    return [diagonal, matrix]


def get_init_inputs():
    return []
