"""A script trying a copy of the package, in a directory git ignores."""

import torch
from torch.export import Dim

from mymodels.net import Net

model = Net().eval()
example_args = (torch.randn(8, 16),)
dynamic_shapes = {"x": {0: Dim("batch")}}
