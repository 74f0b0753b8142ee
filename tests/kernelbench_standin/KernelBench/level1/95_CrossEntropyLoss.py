"""The project's CI stand-in for KernelBench level 1's 95_CrossEntropyLoss.py, at small sizes.

forward(predictions, targets) is the multi-class cross entropy with mean reduction: predictions
holds one row of unnormalised scores (logits) per sample, targets one class index (int64) per
sample; each sample's loss is the log of the sum of exp over its row minus the score of its
target class, and the result is their average, a 0-dim tensor. The Model has no parameters.
get_inputs() draws the scores uniform in [0, 1) of shape (batch_size, num_classes), then
batch_size class indices uniform over 0 .. num_classes - 1.
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Average negative log-probability of the target class under a softmax of each row."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        log_probabilities = torch.log_softmax(predictions, dim=1)
        picked = log_probabilities.gather(1, targets.unsqueeze(1)).squeeze(1)
        return -picked.mean()


batch_size = 128
num_classes = 1000
input_shape = (num_classes,)
dim = 1


def get_inputs():
    scores = torch.rand(batch_size, *input_shape)
    labels = torch.randint(0, num_classes, (batch_size,))
    return [scores, labels]


def get_init_inputs():
    return []
