"""The project's CI stand-in for KernelBench level 1's 67_conv_standard_1D.py, at small sizes.

A one-dimensional convolution layer (torch.nn.Conv1d) over an input laid out as
(batch, channels, length), with the layer's default stride, padding, dilation and groups and
no bias term. The constructor takes the layer's configuration in the problem's order and keeps
the layer under the attribute name `conv1d`; get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a single Conv1d layer to its input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d(x)


batch_size = 3
in_channels = 12
out_channels = 10
kernel_size = 5
length = 700


def get_inputs():
    return [torch.rand(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
