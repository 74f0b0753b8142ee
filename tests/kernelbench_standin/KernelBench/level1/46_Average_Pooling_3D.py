"""The project's CI stand-in for KernelBench level 1's 46_Average_Pooling_3D.py, at small sizes.

One torch.nn.AvgPool3d layer with a cubic kernel_size window over a (batch, channels, depth,
height, width) input, moved `stride` per output along every axis, with `padding` planes of zeros
on each face that count in the mean (the layer's default count_include_pad), floor-mode output
sizes. get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wraps a single AvgPool3d layer, kept as `avg_pool`."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        super().__init__()
        self.avg_pool = nn.AvgPool3d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg_pool(x)


batch_size = 2
channels = 3
depth = 16
height = 20
width = 31
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.rand(batch_size, channels, depth, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
