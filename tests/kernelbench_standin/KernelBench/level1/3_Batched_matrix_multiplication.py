"""The project's CI stand-in for KernelBench level 1 problem 3 (batched matrix product).

forward(A, B) multiplies each of batch_size (m, k) matrices of A by the matching (k, n) matrix of
B (torch.bmm), giving (batch_size, m, n). The sizes are small here, so CI can gate
examples/kernelbench/candidate_kb_batched_matmul.py on the CPU; the size constants' names and the
random calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """No parameters: the output is torch.bmm(A, B)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 3
m = 48
k = 80
n = 112


def get_inputs():
    # Uniform [0, 1) batches of operands, A drawn before B.
    A = torch.rand(batch_size, m, k)
    B = torch.rand(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
