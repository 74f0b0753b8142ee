"""The project's CI stand-in for KernelBench level 1's 26_GELU_.py, at small sizes.

forward(x) is the Gaussian error linear unit in its exact form (not the tanh approximation),
element by element: x times the standard normal CDF at x, 0.5 * x * (1 + erf(x / sqrt(2))). The
result has x's shape. The Model has no parameters; get_inputs() draws one uniform [0, 1) tensor
of shape (batch_size, dim).
"""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """x * Phi(x), Phi the standard normal distribution function."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


batch_size = 16
dim = 3072


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
