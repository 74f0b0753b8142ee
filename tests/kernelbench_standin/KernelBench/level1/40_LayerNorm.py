"""The project's CI stand-in for KernelBench level 1's 40_LayerNorm.py, at small sizes.

torch.nn.LayerNorm over the trailing (features, dim1, dim2) axes, with its defaults (eps 1e-5, an
elementwise affine weight and bias of that shape): every leading index is normalised with the mean
and biased variance of its features * dim1 * dim2 elements. The Model takes the normalised shape
as one tuple and keeps the layer under the attribute name `ln`; get_inputs() draws one uniform
[0, 1) tensor of shape (batch_size, features, dim1, dim2).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Layer normalisation over the last three axes."""

    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 6
features = 3
dim1 = 20
dim2 = 64


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
