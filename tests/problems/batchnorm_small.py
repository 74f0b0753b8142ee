"""Batch normalisation of a (N, C, H, W) tensor, in KernelBench's format: a test fixture whose Model is used in the
mode it is built in (training: batch statistics), as KernelBench's evaluation leaves it."""

import torch
import torch.nn as nn

batch_size = 4
features = 3
height = 5
width = 7


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, features, height, width) * 2 + 1]


def get_init_inputs():
    return [features]
