# https://github.com/pytorch/pytorch/issues/145737
# "while_loop fails to export when strict=False" (desertfire): test_while_loop_simple, non-strict.
import torch


class Simple(torch.nn.Module):
    def forward(self, ci, a, b):
        def cond_fn(i, x, y):
            return i > 0

        def body_fn(i, x, y):
            return i - 1, x + y, y - x

        return torch._higher_order_ops.while_loop(cond_fn, body_fn, [ci, a, b])


model = Simple()
example_args = (
    torch.tensor(1),
    torch.randn(10, 20),
    torch.randn(10, 20),
)
strict = False
