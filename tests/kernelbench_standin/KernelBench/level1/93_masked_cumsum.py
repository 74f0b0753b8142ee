"""The project's small stand-in for KernelBench level 1's 93_masked_cumsum.py, used by CI.

Model(dim).forward(x, mask) zeroes the elements of x whose boolean mask entry is False (by
multiplying with the mask) and returns torch.cumsum of the result along `dim`. get_inputs() draws
a uniform [0, 1) x of shape (batch_size, *input_shape) and then a mask of x's shape from
torch.randint(0, 2, ...) turned to bool, as the real problem does, only smaller here.
"""
import torch
from torch import nn


class Model(nn.Module):
    """Prefix sum along a fixed dimension of only the elements a boolean mask keeps."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        kept = x * mask
        return torch.cumsum(kept, dim=self.dim)


batch_size = 48
input_shape = (2100,)
dim = 1


def get_inputs():
    x = torch.rand(batch_size, *input_shape)
    keep = torch.randint(0, 2, x.shape).bool()
    return [x, keep]


def get_init_inputs():
    return [dim]
