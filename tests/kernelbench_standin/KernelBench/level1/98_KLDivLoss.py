"""The project's CI stand-in for KernelBench level 1's 98_KLDivLoss.py, at small sizes.

forward(predictions, targets) takes two tensors of probability rows (each row positive, summing
to one) and returns the Kullback-Leibler divergence of predictions from targets, batch-averaged:
the sum over every element of targets * (log(targets) - log(predictions)), a zero target
contributing nothing, divided by the number of rows (the size of dim 0). This is what
torch.nn.functional.kl_div gives with log(predictions) as its input and reduction='batchmean'. The
result is a 0-dim tensor; the Model has no parameters. get_inputs() first draws one uniform [0, 1)
scalar, then uniform [0, 1) logits of shape (batch_size, *input_shape) times that scalar, turned
into rows by a softmax over the last dimension, then a second such tensor, unscaled, for targets.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Batch-averaged KL(targets || predictions)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        pointwise = torch.xlogy(targets, targets) - targets * torch.log(predictions)
        return pointwise.sum() / predictions.shape[0]


batch_size = 64
input_shape = (1000,)
dim = 1


def get_inputs():
    factor = torch.rand(())
    predictions = (torch.rand(batch_size, *input_shape) * factor).softmax(dim=-1)
    targets = torch.rand(batch_size, *input_shape).softmax(dim=-1)
    return [predictions, targets]


def get_init_inputs():
    return []
