"""The project's CI stand-in for KernelBench level 1's 94_MSELoss.py, at small sizes.

forward(predictions, targets) is the mean squared error: the average, over every element, of the
squared difference between the two same-shaped tensors, returned as a 0-dim tensor. The Model has
no parameters. get_inputs() first draws one uniform [0, 1) scalar, then predictions uniform in
[0, 1) multiplied by that scalar, then targets uniform in [0, 1), both (batch_size, *input_shape).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Average squared difference of two tensors."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        difference = predictions - targets
        return (difference * difference).mean()


batch_size = 64
input_shape = (1024,)
dim = 1


def get_inputs():
    factor = torch.rand(())
    predictions = torch.rand(batch_size, *input_shape) * factor
    targets = torch.rand(batch_size, *input_shape)
    return [predictions, targets]


def get_init_inputs():
    return []
