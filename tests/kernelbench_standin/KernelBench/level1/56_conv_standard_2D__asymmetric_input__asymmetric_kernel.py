"""The project's CI stand-in for KernelBench level 1 problem 56 (a 2-D convolution with a rectangular
kernel on a rectangular input).

forward(x) applies a bias-free nn.Conv2d to an (N, C_in, H, W) float32 input with a (kh, kw)
kernel; get_init_inputs() passes only the channel counts and the kernel size, so stride 1, no
padding, no dilation and one group. The sizes are small so that CI can gate
examples/kernelbench/candidate_kb_conv2d_asymmetric.py on the CPU; the size constants' names, the
Model's constructor, its submodule's name (conv2d) and the random calls of get_inputs() are the
ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """A bias-free Conv2d; its weight is state_dict()'s conv2d.weight, (C_out, C_in / groups, kh, kw)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1),
                 padding: tuple = (0, 0), dilation: tuple = (1, 1), groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 2
in_channels = 8
out_channels = 16
kernel_size = (5, 7)
height = 40
width = 24


def get_inputs():
    # One uniform [0, 1) image batch.
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
