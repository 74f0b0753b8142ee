"""A 1-D convolution with a bias, in KernelBench's format: a test fixture whose Model holds kaiming-drawn weights."""

import torch
import torch.nn as nn

batch_size = 4
in_channels = 3
out_channels = 5
kernel_size = 3
length = 45


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d(x)


def get_inputs():
    return [torch.rand(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
