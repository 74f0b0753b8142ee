"""The project's CI stand-in for KernelBench level 1's 57_conv_transposed_2D__square_input__square_kernel.py.

A two-dimensional transposed convolution layer (torch.nn.ConvTranspose2d) with a square window,
default stride, padding, output padding, groups and dilation and no bias, applied to an input
laid out as (batch, channels, height, width); each output plane grows by kernel_size - 1 along
both axes. The layer lives under the attribute name `conv_transpose2d`; the sizes below are
small, and height differs from width so that a swapped axis shows.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a single ConvTranspose2d layer with a square window to its input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 output_padding: int = 0, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                   padding=padding, output_padding=output_padding, groups=groups,
                                                   bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose2d(x)


batch_size = 2
in_channels = 9
out_channels = 7
kernel_size = 3
height = 30
width = 26


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
