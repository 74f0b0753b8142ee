"""The project's CI stand-in for KernelBench level 1's 100_HingeLoss.py, at small sizes.

forward(predictions, targets) is the mean hinge loss: the product predictions * targets (targets
broadcast against predictions' last dimension), taken from one, floored at zero, and averaged over
every element of the product into a 0-dim tensor. The Model has no parameters. get_inputs() draws
predictions uniform in [0, 1) of shape (batch_size, *input_shape), then batch_size labels, each
-1.0 or +1.0, made from random integers in {0, 1}.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Average of max(0, 1 - prediction * label)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.relu(1.0 - predictions * targets).mean()


batch_size = 256
input_shape = (256,)
dim = 1


def get_inputs():
    predictions = torch.rand(batch_size, *input_shape)
    labels = torch.randint(0, 2, (batch_size,)).float() * 2 - 1
    return [predictions, labels]


def get_init_inputs():
    return []
