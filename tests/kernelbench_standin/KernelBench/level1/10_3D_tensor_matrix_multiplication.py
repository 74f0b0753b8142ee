"""This project's own small stand-in for KernelBench level 1, problem 10 (3-D tensor times matrix).

CI gates candidate_kb_tensor3d_matmul.py against it on the CPU. forward(A, B) multiplies each of
the N matrices A[n] (M x K) by the one matrix B (K x L), torch.matmul broadcasting B over A's
leading dimension; the result is (N, M, L). get_inputs() draws A, then B, uniformly from [0, 1).
"""
import torch
from torch import nn


class Model(nn.Module):
    """A batch of matrices times a single shared matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 3
M = 64
K = 128
L = 96


def get_inputs():
    batch = torch.rand(N, M, K)
    shared = torch.rand(K, L)
    return [batch, shared]


def get_init_inputs():
    return []
