"""The project's CI stand-in for KernelBench level 1's 43_Max_Pooling_3D.py, at small sizes.

One torch.nn.MaxPool3d layer with a cubic window over a (batch, channels, d1, d2, d3) input: each
output is the largest input under a kernel_size^3 window whose taps are `dilation` apart, moved
`stride` per output along every axis, with `padding` planes on each face that never win. The
constructor's return_indices and ceil_mode stay False here (values only, floor-mode sizes).
get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wraps a single MaxPool3d layer, kept as `maxpool`."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.maxpool = nn.MaxPool3d(kernel_size, stride=stride, padding=padding, dilation=dilation,
                                    return_indices=return_indices, ceil_mode=ceil_mode)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 2
channels = 3
dim1 = 20
dim2 = 18
dim3 = 23
kernel_size = 3
stride = 2
padding = 1
dilation = 3


def get_inputs():
    return [torch.rand(batch_size, channels, dim1, dim2, dim3)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
