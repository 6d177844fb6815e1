# https://github.com/pytorch/pytorch/issues/150851
# "Cannot export torch.sym_max(x.shape[0], y.shape[0])" (xadupre).
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        s1 = max(x.shape[0], y.shape[0])
        s2 = max(x.shape[1], y.shape[1])
        z = torch.zeros((s1, s2), dtype=x.dtype)
        z[: x.shape[0], : x.shape[1]] = x
        z[: y.shape[0], : y.shape[1]] += y
        return z


model = Model()
x = torch.arange(6).reshape((2, 3))
y = torch.arange(6).reshape((3, 2)) * 10
z = model(x, y)

DYN = torch.export.Dim.DYNAMIC

example_args = (x, y)
dynamic_shapes = ({0: DYN, 1: DYN}, {0: DYN, 1: DYN})
