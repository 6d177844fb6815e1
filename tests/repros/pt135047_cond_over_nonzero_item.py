# https://github.com/pytorch/pytorch/issues/135047
# "torch.cond export succeeds with strict, fails in non-strict with 'Could not extract
# specialized integer from data-dependent expression'" (ezyang).
import torch


class M(torch.nn.Module):
    def forward(self, a, b):
        az = a.nonzero()

        def true_fn(x):
            b0 = b.item()
            return x * b0

        def false_fn(x):
            return x + 1

        r = torch.cond(az.size(0) > 3, true_fn, false_fn, (az,))
        return r * 2


args = (torch.randn(7), torch.tensor([4]))
M()(*args)
model = M()
example_args = args
strict = False
