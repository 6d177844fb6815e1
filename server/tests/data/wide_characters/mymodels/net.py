import torch
from torch import nn

from .heads import Head
from .helpers import normalize


class Net(nn.Module):
    """Normalises, then classifies: « 𝐡 » is the normalised map."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.head = Head()

    def forward(self, x):
        𝐡 = normalize(self.proj(x))
        return self.head(𝐡)
