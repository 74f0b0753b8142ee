"""The project's CI stand-in for KernelBench level 1's 97_ScaledDotProductAttention.py, at small sizes.

forward(Q, K, V) is softmax attention without a mask, dropout or causality: for every batch and
head, the scores Q @ K^T are multiplied by 1 / sqrt(embedding size), a softmax is taken over the
keys, and the weights average the rows of V; the output has Q's shape. This is what
torch.nn.functional.scaled_dot_product_attention computes with its defaults. The Model has no
parameters. get_inputs() draws Q, then K, then V, each uniform in [0, 1) of shape
(batch_size, num_heads, sequence_length, embedding_dimension).
"""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Unmasked scaled dot-product attention over the last two dimensions."""

    def __init__(self):
        super().__init__()

    def forward(self, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        return torch.softmax(scores, dim=-1) @ V


batch_size = 2
num_heads = 3
sequence_length = 80
embedding_dimension = 64


def get_inputs():
    Q = torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)
    K = torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)
    V = torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)
    return [Q, K, V]


def get_init_inputs():
    return []
