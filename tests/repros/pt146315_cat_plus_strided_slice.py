# https://github.com/pytorch/pytorch/issues/146315
# "torch.export.export + dynamic shapes fails with x + y[::2]" (xadupre).
import torch


class Model(torch.nn.Module):
    def forward(self, x, y, z):
        return torch.cat((x, y), axis=1) + z[:, ::2]  # error[PT401]


model = Model()
x = torch.randn(2, 3)
y = torch.randn(2, 5)
z = torch.randn(2, 16)
model(x, y, z)

batch = torch.export.Dim("batch")
dx = torch.export.Dim("dx")
dy = torch.export.Dim("dy")
dz = torch.export.Dim("dz")
example_args = (x, y, z)
dynamic_shapes = {
    "x": {0: batch, 1: dx},
    "y": {0: batch, 1: dy},
    "z": {0: batch, 1: dz},
}
strict = True
