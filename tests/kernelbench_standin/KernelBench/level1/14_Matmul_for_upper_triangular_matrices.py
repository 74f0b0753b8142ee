"""This project's own small stand-in for KernelBench level 1, problem 14 (upper triangular product).

CI gates candidate_kb_triu_matmul.py against it on the CPU. forward(A, B) multiplies two N x N
matrices and keeps the upper triangle of the product, diagonal included (torch.triu, entries
below the diagonal set to 0). get_inputs() gives upper triangular inputs: the upper triangle of a
uniform [0, 1) draw, A's first, then B's.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Upper triangle of the product of two square matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.triu(A @ B)


N = 160


def get_inputs():
    first = torch.triu(torch.rand(N, N))
    second = torch.triu(torch.rand(N, N))
    return [first, second]


def get_init_inputs():
    return []
