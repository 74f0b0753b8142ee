"""The project's CI stand-in for KernelBench level 1's 64_conv_transposed_1D.py, at small sizes.

A one-dimensional transposed convolution layer (torch.nn.ConvTranspose1d) over an input laid out
as (batch, channels, length), with the layer's default stride, padding, output padding, groups
and dilation and no bias: each output has length + kernel_size - 1 positions. The layer lives
under the attribute name `conv1d_transpose`; get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a single ConvTranspose1d layer to its input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 output_padding: int = 0, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv1d_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride,
                                                   padding=padding, output_padding=output_padding, groups=groups,
                                                   bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d_transpose(x)


batch_size = 4
in_channels = 11
out_channels = 9
kernel_size = 4
length = 500


def get_inputs():
    return [torch.rand(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
