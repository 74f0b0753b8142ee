"""The project's CI stand-in for KernelBench level 1 problem 86 (a depthwise-separable 2-D convolution).

forward(x) runs two bias-free convolutions in turn on an (N, C_in, H, W) float32 input: a
depthwise one (each channel its own kernel_size x kernel_size filter, at the given stride, zero
padding and dilation), then a 1x1 one mixing the C_in channels into out_channels. The sizes are
small so that CI can gate examples/kernelbench/candidate_kb_conv_depthwise_separable_2d.py on the
CPU; the size constants' names, the Model's constructor, its submodules' names (depthwise,
pointwise) and the random calls of get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Depthwise then pointwise Conv2d: state_dict() holds depthwise.weight (C_in, 1, k, k) and
    pointwise.weight (C_out, C_in, 1, 1)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, bias: bool = False):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                   dilation=dilation, groups=in_channels, bias=bias)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


batch_size = 2
in_channels = 8
out_channels = 16
kernel_size = 3
width = 40
height = 33
stride = 1
padding = 1
dilation = 1


def get_inputs():
    # One uniform [0, 1) image batch.
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
