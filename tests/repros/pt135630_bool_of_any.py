# https://github.com/pytorch/pytorch/issues/135630
# "Real tensor prop for bool cast on x.eq().any() call fails export" (pianpwk): the toy model,
# non-strict, exported the plain way.
import torch


class Foo(torch.nn.Module):
    def forward(self, x):
        return bool(x.eq(0.1).any())  # error[PT101]


model = Foo()
inputs = (torch.randn(64),)
example_args = inputs
strict = False
