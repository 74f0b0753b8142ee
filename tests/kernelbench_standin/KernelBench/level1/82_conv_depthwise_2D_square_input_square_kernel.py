"""The project's CI stand-in for KernelBench level 1 problem 82 (a depthwise 2-D convolution).

forward(x) convolves each of the in_channels planes of an (N, C, H, W) float32 input with a
kernel_size x kernel_size filter of its own (nn.Conv2d with groups equal to the channel count, so
the output has the same C channels), at the given stride and zero padding, without bias. The
sizes are small so that CI can gate examples/kernelbench/candidate_kb_conv_depthwise_2d.py on the
CPU; the size constants' names, the Model's constructor, its submodule's name (conv2d) and the
random calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """A depthwise Conv2d; its weight is state_dict()'s conv2d.weight, (C, 1, k, k)."""

    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                groups=in_channels, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 2
in_channels = 8
kernel_size = 3
width = 67
height = 45
stride = 1
padding = 0


def get_inputs():
    # One uniform [0, 1) image batch.
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, kernel_size, stride, padding]
