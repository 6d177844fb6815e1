# https://github.com/pytorch/pytorch/issues/136075
# "torch._dynamo.exc.Unsupported: builtin: bool [SymNodeVariable] False" (ezyang): strict, as in
# the issue, without the real-tensor-propagation patch.
import torch
from torch.export import export


class Foo(torch.nn.Module):
    def forward(self, x):
        return bool(x.eq(0.1).any().item())


model = Foo()
inputs = (torch.randn(64),)
example_args = inputs
strict = True
