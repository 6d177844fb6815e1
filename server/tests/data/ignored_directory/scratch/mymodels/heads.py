import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(16, 4)

    def forward(self, h):
        if h.shape[0] > 4:  # error[PT401]
            return self.out(h)
        return self.out(h).relu()
