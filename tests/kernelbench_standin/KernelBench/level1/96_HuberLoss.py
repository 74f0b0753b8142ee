"""The project's CI stand-in for KernelBench level 1's 96_HuberLoss.py, at small sizes.

forward(predictions, targets) is the smooth L1 loss with its default threshold beta = 1 and mean
reduction: for each element's absolute difference a, 0.5 * a**2 when a < 1, else a - 0.5; the
average over every element, as a 0-dim tensor. The Model has no parameters. get_inputs() first
draws one uniform [0, 1) scalar, then predictions uniform in [0, 1) times that scalar, then targets
uniform in [0, 1), both (batch_size, *input_shape).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean of the elementwise Huber penalty (quadratic below 1, linear above)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        a = (predictions - targets).abs()
        return torch.where(a < 1.0, 0.5 * a * a, a - 0.5).mean()


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    factor = torch.rand(())
    predictions = torch.rand(batch_size, *input_shape) * factor
    targets = torch.rand(batch_size, *input_shape)
    return [predictions, targets]


def get_init_inputs():
    return []
