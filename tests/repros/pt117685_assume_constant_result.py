# https://github.com/pytorch/pytorch/issues/117685
# "assume_constant_result has coderotted in places" (voznesenskym): `Bob`, exported strict as
# export then was (`.cuda()` dropped).
import torch


class Baz(torch.nn.Module):
    def __init__(self, p) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # Truely dynamic
        if y < self.p:
            return torch.cat([x, x])
        else:
            return x


@torch._dynamo.assume_constant_result
def get_y(y) -> torch.Tensor:
    return y


class Bob(torch.nn.Module):
    def __init__(self, p, val) -> None:
        super().__init__()
        self.p = p
        self.y = torch.nn.Parameter(torch.tensor(val))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # This only looks dynamic but it's actually a constant value
        if get_y(self.y) < self.p:
            return torch.cat([x, x])
        else:
            return x


# model = Baz(0.5)
model = Bob(0.5, 0.3)
model.eval()
x = torch.randn([1024, 1024])
example_args = (x,)
strict = True
