"""The project's CI stand-in for KernelBench level 1's 34_InstanceNorm.py, at small sizes.

torch.nn.InstanceNorm2d with its defaults (eps 1e-5, no affine parameters, no running statistics):
every (sample, channel) plane of a (batch, channels, height, width) input is shifted by its own mean
and divided by the square root of its biased variance plus eps. The layer is kept under the
attribute name `inorm`; get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Normalises each spatial plane of each sample on its own."""

    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


batch_size = 6
features = 5
dim1 = 36
dim2 = 41


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
