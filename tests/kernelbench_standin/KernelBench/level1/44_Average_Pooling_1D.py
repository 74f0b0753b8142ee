"""The project's CI stand-in for KernelBench level 1's 44_Average_Pooling_1D.py, at small sizes.

One torch.nn.AvgPool1d layer over a (batch, channels, length) input: each output is the mean of a
kernel_size window moved `stride` positions per output. The layer's defaults stay: zero padding of
`padding` positions on both ends that counts in the mean (count_include_pad), floor-mode output
length. get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wraps a single AvgPool1d layer, kept as `avg_pool`."""

    def __init__(self, kernel_size: int, stride: int = 1, padding: int = 0):
        super().__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg_pool(x)


batch_size = 4
in_channels = 6
input_length = 2500
kernel_size = 8
stride = 1
padding = 4


def get_inputs():
    return [torch.rand(batch_size, in_channels, input_length)]


def get_init_inputs():
    return [kernel_size, stride, padding]
