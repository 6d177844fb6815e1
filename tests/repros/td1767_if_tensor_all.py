# https://github.com/pytorch/torchdynamo/issues/1767
# "torchdynamo.export doesn't work with torch.all" (tugsbayasgalan): `f` as written, called from
# a module because torch.export.export takes an nn.Module.
import torch


def f(x):
    x_bool = torch.isfinite(x)
    if x.all():  # error[PT101]
        return x.cos()
    return x.sin()


class F(torch.nn.Module):
    def forward(self, x):
        return f(x)


model = F()
example_args = (torch.ones(6, 4),)
strict = True
