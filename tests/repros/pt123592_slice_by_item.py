# https://github.com/pytorch/pytorch/issues/123592
# "Dynamo unsupported: Dynamic slicing on data-dependent value is not supported": `func` as
# posted, called from a module, strict (it went through torch._dynamo.export).
import torch


def func(x, img_size):
    idx = img_size.item()
    torch._check_is_size(idx)
    torch._check(idx < x.size(0))
    x = x[:idx]
    return x


class Func(torch.nn.Module):
    def forward(self, x, img_size):
        return func(x, img_size)


x = torch.randn(10, 3, 224, 224)
img_size = torch.tensor(5)
model = Func()
example_args = (x, img_size)
strict = True
