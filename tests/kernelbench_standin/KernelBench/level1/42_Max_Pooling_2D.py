"""The project's CI stand-in for KernelBench level 1's 42_Max_Pooling_2D.py, at small sizes.

One torch.nn.MaxPool2d layer with a square window over a (batch, channels, height, width) input:
each output is the largest input under a kernel_size x kernel_size window whose taps are
`dilation` apart, moved `stride` per output along both axes, the borders padded with `padding`
rows and columns that never win. Floor-mode output size. get_inputs() draws one uniform [0, 1)
tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wraps a single MaxPool2d layer, kept as `maxpool`."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 3
channels = 5
height = 90
width = 70
kernel_size = 4
stride = 1
padding = 1
dilation = 1


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
