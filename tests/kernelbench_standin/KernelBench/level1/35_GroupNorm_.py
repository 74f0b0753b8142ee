"""The project's CI stand-in for KernelBench level 1's 35_GroupNorm_.py, at small sizes.

torch.nn.GroupNorm(num_groups, num_channels) with its defaults (eps 1e-5, per-channel affine weight
and bias): the channels of each sample are split into num_groups consecutive groups, and every
group is normalised with the mean and biased variance of all its elements (its channels and all
positions) before the channel's weight and bias apply. The layer is kept under the attribute name
`gn`; get_inputs() draws one uniform [0, 1) tensor.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Normalises each group of channels of each sample."""

    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 6
features = 12
num_groups = 4
dim1 = 20
dim2 = 37


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, num_groups]
