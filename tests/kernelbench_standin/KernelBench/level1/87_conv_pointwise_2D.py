"""The project's CI stand-in for KernelBench level 1 problem 87 (a 1x1, "pointwise", 2-D convolution).

forward(x) maps each pixel's in_channels values to out_channels values through one
(out_channels, in_channels) matrix: an nn.Conv2d with a 1x1 kernel, stride 1, no padding and no
bias, on an (N, C_in, H, W) float32 input. The sizes are small so that CI can gate
examples/kernelbench/candidate_kb_conv_pointwise_2d.py on the CPU; the size constants' names, the
Model's constructor and its submodule's name (conv1d, although it is a Conv2d), and the random
calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """A bias-free Conv2d with a 1x1 kernel; its weight is state_dict()'s conv1d.weight, (C_out, C_in, 1, 1)."""

    def __init__(self, in_channels: int, out_channels: int, bias: bool = False):
        super().__init__()
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d(x)


batch_size = 2
in_channels = 8
out_channels = 16
width = 64
height = 48


def get_inputs():
    # One uniform [0, 1) image batch.
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels]
