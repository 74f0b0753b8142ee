"""The project's CI stand-in for KernelBench level 1's 36_RMSNorm_.py, at small sizes.

Root-mean-square normalisation across the feature axis (dim 1), with no learnable parameters: each
element is divided by sqrt(mean over dim 1 of the squared input + eps), the mean taken separately
at every other index. Model(num_features, eps=1e-5) keeps both arguments; get_inputs() draws one
uniform [0, 1) tensor of shape (batch, features, dim1, dim2).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Divides by the root mean square over the feature axis."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = x.pow(2).mean(dim=1, keepdim=True)
        return x / (mean_square + self.eps).sqrt()


batch_size = 6
features = 10
dim1 = 30
dim2 = 38


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
