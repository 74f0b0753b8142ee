"""The project's CI stand-in for KernelBench level 1's 99_TripletMarginLoss.py, at small sizes.

forward(anchor, positive, negative) is the triplet margin loss with the margin given to the Model
(get_init_inputs() gives 1.0), the Euclidean distance, eps = 1e-6 and mean reduction: for each row
i, d(x, y) is the 2-norm of x[i] - y[i] + eps (eps added to every component of the difference, as
torch.nn.functional.pairwise_distance does), the row's loss is max(d(anchor, positive) -
d(anchor, negative) + margin, 0), and the result is the rows' average, a 0-dim tensor. The loss
function is held as the submodule `loss_fn`. get_inputs() first draws one uniform [0, 1) scalar,
then anchors uniform in [0, 1) times that scalar, then positives and negatives uniform in [0, 1),
all (batch_size, *input_shape).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean hinge on the gap between anchor-positive and anchor-negative distances."""

    def __init__(self, margin=1.0):
        super().__init__()
        self.loss_fn = nn.TripletMarginLoss(margin=margin, p=2.0, eps=1e-6)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)


batch_size = 64
input_shape = (500,)
dim = 1


def get_inputs():
    factor = torch.rand(())
    anchor = torch.rand(batch_size, *input_shape) * factor
    positive = torch.rand(batch_size, *input_shape)
    negative = torch.rand(batch_size, *input_shape)
    return [anchor, positive, negative]


def get_init_inputs():
    return [1.0]
