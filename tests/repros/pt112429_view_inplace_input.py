# https://github.com/pytorch/pytorch/issues/112429
# "torch.export does not work with input mutation" (thiagocrepaldi).
import torch


class MutationModel(torch.nn.Module):
    def forward(self, x):
        x.view(3, 2, -1).add_(2.0)
        return x


input = (torch.randn(12),)
model = MutationModel()
example_args = input
strict = True
