# https://github.com/pytorch/pytorch/issues/139805
# "[export] strict=True and strict=False behavior inconsistent when the sample inputs are aliases".
from typing import List

import torch


class ListAdd(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(
        self, x: List[torch.Tensor], y: torch.Tensor, z: torch.Tensor, bs: float = float(0.1)
    ):
        y1 = y.clone()
        z1 = z + y
        for xi in x:
            y1 = y1 + xi + bs
        return y1 + z1


device = torch.device("cpu")
model = ListAdd().to(device)
x = torch.rand(1024, 20, 16).to(device)

example_args = ([x, x, x], x, x, 0.2)
strict = False
