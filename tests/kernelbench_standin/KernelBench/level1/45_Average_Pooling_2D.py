"""The project's CI stand-in for KernelBench level 1's 45_Average_Pooling_2D.py, at small sizes.

One torch.nn.AvgPool2d layer with a square kernel_size window over a (batch, channels, height,
width) input. Only the window size is given, so the stride equals it (windows tile the image
without overlap), there is no padding, and rows or columns left over past the last whole window
are dropped (floor mode). Each output is the mean of its window. get_inputs() draws one uniform
[0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wraps a single AvgPool2d layer, kept as `avg_pool`."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        super().__init__()
        self.avg_pool = nn.AvgPool2d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg_pool(x)


batch_size = 2
channels = 4
height = 150
width = 125
kernel_size = 11


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size]
