# https://github.com/pytorch/pytorch/issues/174013
# "[export] While HOP export error" (justinchuby): the export step.
import torch
from torch.export import export


class SimpleWithLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)
        self.dec = torch.nn.Buffer(torch.tensor(1))

    def forward(self, iter, x):
        def cond_fn(it, x):
            return it - self.dec > 0

        def body_fn(it, x):
            return it - 1, self.linear(x)

        return torch.ops.higher_order.while_loop(cond_fn, body_fn, [iter, x], [])


model = SimpleWithLinear()
example_args = (torch.tensor(3), torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
