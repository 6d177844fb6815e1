import torch
from torch import nn

from .heads import Head
from .helpers import normalize


class Net(nn.Module):
    """Normalises, then classifies: a copy of the package above, changed where it is tried."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.head = Head()

    def forward(self, x):
        h = normalize(self.proj(x))
        return self.head(h)
