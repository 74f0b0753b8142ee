"""This project's own small stand-in for KernelBench level 1, problem 13 (product of symmetric matrices).

CI gates candidate_kb_symmetric_matmul.py against it on the CPU. forward(A, B) is the plain
matrix product torch.matmul(A, B) of two N x N matrices; get_inputs() makes both symmetric by
averaging a uniform [0, 1) draw with its transpose (A's draw first, then B's).
"""
import torch
from torch import nn


class Model(nn.Module):
    """Product of two square matrices (given symmetric ones)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 160


def get_inputs():
    first = torch.rand(N, N)
    first = (first + first.T) / 2
    second = torch.rand(N, N)
    second = (second + second.T) / 2
    return [first, second]


def get_init_inputs():
    return []
