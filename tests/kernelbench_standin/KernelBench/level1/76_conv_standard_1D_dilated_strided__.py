"""The project's CI stand-in for KernelBench level 1 problem 76 (a strided, dilated 1-D convolution).

forward(x) applies an nn.Conv1d without padding or bias to an (N, C_in, L) float32 signal: each
output position l sums, over all input channels and the kernel_size taps k, weight[co, ci, k] *
x[n, ci, l * stride + k * dilation]. The sizes are small so that CI can gate
examples/kernelbench/candidate_kb_conv1d_dilated_strided.py on the CPU; the size constants'
names, the Model's constructor, its submodule's name (conv1d) and the random calls of
get_inputs() are the ones the real problem uses.
"""
import torch
from torch import nn


class Model(nn.Module):
    """A bias-free Conv1d; its weight is state_dict()'s conv1d.weight, (C_out, C_in, k)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, dilation: int = 1,
                 bias: bool = False):
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, dilation=dilation, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv1d(x)


batch_size = 4
in_channels = 8
out_channels = 16
kernel_size = 3
length = 3001
stride = 3
dilation = 4


def get_inputs():
    # One uniform [0, 1) batch of signals.
    x = torch.rand(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, dilation]
