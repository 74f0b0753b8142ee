"""example_matmul: the matrix product C = A @ B of two 2-D float32 matrices, A (M, K) and B (K, N).

Written from the torch documentation of torch.matmul
(https://pytorch.org/docs/stable/generated/torch.matmul.html): "If both arguments are
2-dimensional, the matrix-matrix product is returned." C[i, j] = sum_k A[i, k] * B[k, j],
C has shape (M, N).
"""

import torch
import torch.nn as nn

M = 512
K = 512
N = 512


class Model(nn.Module):
    """C = A @ B for A (M, K), B (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
