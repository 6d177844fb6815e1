# https://github.com/pytorch/pytorch/issues/137062
# "[export] int(x.item()) fails only in strict=False" (angelayi): the test case from the issue.
import torch


class M(torch.nn.Module):
    def forward(self, x):
        return int(x.item())  # error[PT102]


model = M()
example_args = (torch.tensor(2),)
