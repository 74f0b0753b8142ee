"""example_softmax_rows: softmax along dim 1 of a 2-D tensor, out[i, j] = exp(x[i, j]) / sum_k exp(x[i, k]).

Written from the torch documentation of torch.softmax / torch.nn.functional.softmax
(https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html): "Softmax is
defined as Softmax(x_i) = exp(x_i) / sum_j exp(x_j). It is applied to all slices along dim,
and will re-scale them so that the elements lie in the range [0, 1] and sum to 1." Each row
of the output sums to 1.
"""

import torch
import torch.nn as nn

batch_size = 64
dim = 4096


class Model(nn.Module):
    """out = softmax(x, dim=1): each row normalised to a probability distribution."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
