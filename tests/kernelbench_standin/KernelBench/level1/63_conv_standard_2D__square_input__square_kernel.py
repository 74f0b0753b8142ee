"""The project's CI stand-in for KernelBench level 1's 63_conv_standard_2D__square_input__square_kernel.py.

A two-dimensional convolution layer (torch.nn.Conv2d) with a square kernel_size x kernel_size
window, default stride, padding, dilation and groups and no bias, applied to an input laid out
as (batch, channels, height, width). The layer lives under the attribute name `conv2d`; the
sizes below are small, and height differs from width so that a swapped axis shows.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a single Conv2d layer with a square window to its input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), stride=stride,
                                padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 2
in_channels = 5
out_channels = 12
kernel_size = 3
width = 40
height = 36


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
