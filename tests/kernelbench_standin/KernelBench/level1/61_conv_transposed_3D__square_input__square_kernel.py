"""The project's CI stand-in for KernelBench level 1's 61_conv_transposed_3D__square_input__square_kernel.py.

A three-dimensional transposed convolution layer (torch.nn.ConvTranspose3d) with a cubic window,
default stride, padding, output padding, groups and dilation and no bias, applied to a
five-dimensional input drawn as (batch, channels, depth, height, width); each output volume grows
by kernel_size - 1 along all three axes. The layer lives under the attribute name
`conv_transpose3d`; the sizes below are small, with three different spatial extents so that a
permuted axis shows.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a single ConvTranspose3d layer with a cubic window to its input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 output_padding: int = 0, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(in_channels, out_channels,
                                                   kernel_size=(kernel_size, kernel_size, kernel_size), stride=stride,
                                                   padding=padding, output_padding=output_padding, groups=groups,
                                                   bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose3d(x)


batch_size = 2
in_channels = 13
out_channels = 5
kernel_size = 3
depth = 8
height = 9
width = 10


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
