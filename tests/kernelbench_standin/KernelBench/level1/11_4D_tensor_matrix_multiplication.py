"""This project's own small stand-in for KernelBench level 1, problem 11 (4-D tensor times matrix).

CI gates candidate_kb_tensor4d_matmul.py against it on the CPU. forward(A, B) contracts the last
axis of A (b, i, j, l) with the first axis of B (l, k), written as the einsum "bijl,lk->bijk";
the result is (b, i, j, k). get_inputs() draws A, then B, uniformly from [0, 1).
"""
import torch
from torch import nn


class Model(nn.Module):
    """Contracts a 4-D tensor's last axis against a matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("bijl,lk->bijk", A, B)


b = 2
i = 8
j = 16
l = 64
k = 96


def get_inputs():
    tensor = torch.rand(b, i, j, l)
    matrix = torch.rand(l, k)
    return [tensor, matrix]


def get_init_inputs():
    return []
