# A small stand-in for KernelBench's level1/100_HingeLoss.py, used by CI
# (tests/test_kernelbench_examples.py): the same Model and get_inputs()/get_init_inputs() code as the
# real file, only its size constants reduced.
import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A model that computes Hinge Loss for binary classification tasks.

    Parameters:
        None
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))

batch_size = 256
input_shape = (256,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

def get_init_inputs():
    return []