# https://github.com/pytorch/pytorch/issues/147400
# "torch.export doesn't provide useful error message when someone uses unrecognized dataclass as input".
from dataclasses import dataclass

import torch


@dataclass
class MyStaticInput:
    int_1: int
    int_2: int


class Foo(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, x1):
        return x + x1.int_1 + x1.int_2


model = Foo()
example_args = (torch.randn(1), MyStaticInput(1, 2))  # error[PT404]
strict = False
