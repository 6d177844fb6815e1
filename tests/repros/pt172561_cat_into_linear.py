# https://github.com/pytorch/pytorch/issues/172561
# "Dynamo export to ONNX with dynamic shapes for LLMs fail with 'Attempted to negate'": the
# torch.export part, two dynamic widths concatenated into a Linear(32, 16).
import torch
from torch.export import Dim, export


class SimpleModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(32, 16)

    def forward(self, x, y):
        z = torch.cat([x, y], dim=1)
        z = self.linear(z)  # error[PT401]
        return


model = SimpleModel()

x = torch.randn(1, 10)
y = torch.randn(1, 22)

x_dim = Dim("x_dim", min=1, max=31)
y_dim = Dim("y_dim", min=1, max=31)

example_args = (x, y)
dynamic_shapes = {
    "x": {1: x_dim},
    "y": {1: y_dim},
}
