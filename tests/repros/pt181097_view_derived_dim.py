# https://github.com/pytorch/pytorch/issues/181097
# "torch.export generates unexpected guards on dynamic shapes": export succeeds (the surprise is
# a runtime guard `x.size()[0] // 5 != 1` in the exported program).
import torch
from torch.export import Dim, export


class MyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = 5

    def forward(self, x, y):
        x1 = x.view(self.c, -1)
        return [x1[i] - y for i in range(self.c)]


model = MyModel()
_dim = Dim("batch", min=1, max=8)
example_args = (torch.randn(5 * 4), torch.randn(4))
dynamic_shapes = {
    "x": {0: _dim * 5},
    "y": {0: _dim},
}
