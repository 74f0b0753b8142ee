"""The project's CI stand-in for KernelBench level 1's 33_BatchNorm.py, at small sizes.

A 2-D batch normalisation layer (torch.nn.BatchNorm2d with its defaults: eps 1e-5, learnable affine
weight and bias, running statistics tracked) over a (batch, channels, height, width) input. The
Model is never put in eval mode, so each channel is normalised with the mean and biased variance of
its batch. The layer is kept under the attribute name `bn`; get_inputs() draws one uniform [0, 1)
tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Normalises each channel over the batch and both spatial axes."""

    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 8
features = 4
dim1 = 40
dim2 = 45


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
