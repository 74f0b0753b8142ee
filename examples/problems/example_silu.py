"""example_silu: SiLU (swish) applied elementwise, out = x * sigmoid(x) = x / (1 + exp(-x)).

Written from the torch documentation of torch.nn.functional.silu
(https://pytorch.org/docs/stable/generated/torch.nn.functional.silu.html): "Apply the
Sigmoid Linear Unit (SiLU) function, element-wise. silu(x) = x * sigma(x), where sigma(x)
is the logistic sigmoid." The output has the input's shape and dtype.
"""

import torch
import torch.nn as nn

batch_size = 16
dim = 16384


class Model(nn.Module):
    """out = silu(x), element by element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(x)


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
