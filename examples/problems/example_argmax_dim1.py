"""example_argmax_dim1: index of the largest element along dim 1 of a 3-D tensor, as int64.

Written from the torch documentation of torch.argmax
(https://pytorch.org/docs/stable/generated/torch.argmax.html): "Returns the indices of the
maximum values of a tensor across a dimension. ... If there are multiple maximal values then
the indices of the first maximal value are returned." With keepdim=False (the default) dim 1
is removed: x (B, R, C) gives out (B, C) of dtype int64, out[b, c] = the first r at which
x[b, r, c] is largest.
"""

import torch
import torch.nn as nn

batch_size = 16
dim1 = 256
dim2 = 256


class Model(nn.Module):
    """out = argmax(x, dim=1), first index on ties."""

    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [1]
