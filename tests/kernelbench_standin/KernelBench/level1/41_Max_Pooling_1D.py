"""The project's CI stand-in for KernelBench level 1's 41_Max_Pooling_1D.py, at small sizes.

One torch.nn.MaxPool1d layer over a (batch, features, length) input: each output position is
the largest of kernel_size inputs spaced `dilation` apart, the window moving `stride` positions
per output, with `padding` positions of -inf on both ends (they never win). Values only
(return_indices stays False), floor-mode output length. get_inputs() draws one uniform [0, 1)
tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Wraps a single MaxPool1d layer, kept as `maxpool`."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1,
                 return_indices: bool = False):
        super().__init__()
        self.maxpool = nn.MaxPool1d(kernel_size, stride=stride, padding=padding, dilation=dilation,
                                    return_indices=return_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 4
features = 6
sequence_length = 3000
kernel_size = 8
stride = 1
padding = 4
dilation = 3
return_indices = False


def get_inputs():
    return [torch.rand(batch_size, features, sequence_length)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation, return_indices]
