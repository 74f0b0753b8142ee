"""The project's CI stand-in for KernelBench level 1's 19_ReLU.py, at small sizes.

forward(x) is the rectified linear unit taken element by element: each negative entry becomes
zero and every other entry is kept, so the result has x's shape. The Model has no parameters;
get_inputs() draws one uniform [0, 1) tensor of shape (batch_size, dim).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Clamps every entry below at zero."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0.0)


batch_size = 16
dim = 3072


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
