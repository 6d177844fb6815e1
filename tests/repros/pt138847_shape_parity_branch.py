# https://github.com/pytorch/pytorch/issues/138847
# "Using shape dependent conditionals with export resulted in weird KeyError" (CPU instead of
# CUDA).
import torch


class M(torch.nn.Module):
    def forward(self, x):
        if x.size(0) % 2 == 0:
            return x.clone() * 2
        else:
            return x.clone() * 0


input1 = (torch.rand(size=(4,)),)
model = M()

_ = model(*input1)

example_args = input1
dynamic_shapes = {
    "x": {0: torch.export.Dim.DYNAMIC},
}
strict = False
