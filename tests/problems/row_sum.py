"""Sum of each row of a float32 matrix: a test fixture in KernelBench's format (torch.sum, dim=1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


def get_inputs():
    x = torch.randn(64, 256)
    return [x]


def get_init_inputs():
    return []
