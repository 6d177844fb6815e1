# https://github.com/pytorch/pytorch/issues/140421
# "torch.export.export of torch.nonzero failed": the export itself succeeds (the failure was in
# compiling the exported module afterwards).
import torch


class M(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


model = M()
example_args = (torch.randn(64, 10),)
strict = True
