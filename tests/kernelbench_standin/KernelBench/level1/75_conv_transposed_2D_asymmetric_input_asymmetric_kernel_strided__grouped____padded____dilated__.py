"""The project's CI stand-in for KernelBench level 1 problem 75 (a strided, grouped, padded, dilated
transposed 2-D convolution).

forward(x) applies a bias-free nn.ConvTranspose2d to an (N, C_in, H, W) float32 input: every
input element x[n, ci, i, j] adds x * weight[ci, co % (C_out / groups), a, b] to the output at
(i * stride_h - padding_h + a * dilation_h, j * stride_w - padding_w + b * dilation_w) for each
output channel co of ci's group, positions outside the output dropped; no output padding. The
sizes are small so that CI can gate examples/kernelbench/candidate_kb_conv_transpose2d_grouped.py
on the CPU; the size constants' names, the Model's constructor, its submodule's name
(conv_transpose2d) and the random calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """A bias-free ConvTranspose2d; its weight is state_dict()'s conv_transpose2d.weight,
    (C_in, C_out / groups, kh, kw)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1),
                 padding: tuple = (0, 0), dilation: tuple = (1, 1), groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                   padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose2d(x)


batch_size = 2
in_channels = 8
out_channels = 16
kernel_size = (3, 5)
height = 12
width = 20
stride = (2, 3)
padding = (1, 2)
dilation = (2, 1)
groups = 4


def get_inputs():
    # One uniform [0, 1) image batch.
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation, groups]
