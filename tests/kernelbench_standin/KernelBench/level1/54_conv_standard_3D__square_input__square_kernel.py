"""The project's CI stand-in for KernelBench level 1's 54_conv_standard_3D__square_input__square_kernel.py.

A three-dimensional convolution layer (torch.nn.Conv3d) with a cubic kernel_size^3 window,
default stride, padding, dilation and groups and no bias, applied to a five-dimensional input
drawn as (batch, channels, depth, width, height). The layer lives under the attribute name
`conv3d`; the sizes below are small, with three different spatial extents so that a permuted
axis shows.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a single Conv3d layer with a cubic window to its input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv3d = nn.Conv3d(in_channels, out_channels, (kernel_size, kernel_size, kernel_size), stride=stride,
                                padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv3d(x)


batch_size = 2
in_channels = 10
out_channels = 8
kernel_size = 3
depth = 10
width = 12
height = 9


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, width, height)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
