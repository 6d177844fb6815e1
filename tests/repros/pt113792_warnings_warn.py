# https://github.com/pytorch/pytorch/issues/113792
# "[export] Export warnings as no-ops" (angelayi): `f` as written, called from a module, strict
# as export was then.
import warnings

import torch


def f(x):
    warnings.warn("moo")
    return x + x


class F(torch.nn.Module):
    def forward(self, x):
        return f(x)


model = F()
example_args = (torch.ones(1, 3),)
strict = True
