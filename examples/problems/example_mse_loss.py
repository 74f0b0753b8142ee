"""example_mse_loss: mean squared error over every element, loss = mean((pred - target) ** 2).

Written from the torch documentation of torch.nn.functional.mse_loss
(https://pytorch.org/docs/stable/generated/torch.nn.functional.mse_loss.html) and of
torch.nn.MSELoss (https://pytorch.org/docs/stable/generated/torch.nn.MSELoss.html): "Measures
the element-wise mean squared error"; with reduction='mean' (the default) the squared
differences of all elements are summed and divided by the number of elements, and the result
is a scalar (a 0-dim tensor).
"""

import torch
import torch.nn as nn

batch_size = 128
dim = 4096


class Model(nn.Module):
    """loss = mean((pred - target) ** 2), a 0-dim tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(pred, target, reduction="mean")


def get_inputs():
    pred = torch.randn(batch_size, dim)
    target = torch.randn(batch_size, dim)
    return [pred, target]


def get_init_inputs():
    return []
