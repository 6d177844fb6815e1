# https://github.com/pytorch/pytorch/issues/141305
# "[Export] torch.export of a model with torch.cond doesn't work" (non-strict; `.cuda()` dropped).
import torch
from torch.export import Dim


class M(torch.nn.Module):
    def forward(self, x, y, z):
        a = y.shape[0]
        b = z.shape[0]

        def true_fn(x):
            return x + a

        def false_fn(x):
            return x + b * z

        return torch.cond(x.shape[0] > 5, true_fn, false_fn, (x,))


example_args = (torch.ones(3, 3), torch.ones(5), torch.ones(3, 3))
model = M()
dynamic_shapes = {"x": {0: Dim("d")}, "y": {0: Dim("d1")}, "z": {0: Dim("d")}}
strict = False
