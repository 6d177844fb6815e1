# https://github.com/pytorch/pytorch/issues/130379
# "[export] Error when there exists a constant tensor w/ set grad" (angelayi).
import torch


class M(torch.nn.Module):
    def forward(self, x, y):
        with torch.no_grad():
            c = torch.tensor(4)
            z = c + x + y

        return z * z


model = M()
example_args = (torch.ones(4), torch.ones(4))
strict = True
