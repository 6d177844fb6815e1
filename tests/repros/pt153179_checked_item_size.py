# https://github.com/pytorch/pytorch/issues/153179
# "export: No error raised on data-dependent assertion." (ysiraichi): export succeeds; the
# maintainers expect the assertion to fail at run time instead.
import torch
from torch.export import Dim, export


class Foo(torch.nn.Module):
    def forward(self, a):
        u0 = a[0].item()
        torch._check(u0 > 1)
        torch._check(u0 * a.shape[0] == 5)
        return torch.ones(u0)


inp = (torch.randint(2, 10, (6,)),)
model = Foo()
example_args = inp
dynamic_shapes = {
    "a": (Dim.DYNAMIC,),
}
