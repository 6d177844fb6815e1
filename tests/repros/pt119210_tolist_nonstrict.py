# https://github.com/pytorch/pytorch/issues/119210
# "Non-strict export does not support tolist" (ezyang); fixed since by FunctionalTensor.tolist.
import torch.export
import torch.nn


class M(torch.nn.Module):
    def forward(self, x):
        a, b = x.tolist()
        return x + a + b


model = M()
example_args = [torch.tensor([1.0, 2.0])]
example_kwargs = {}
strict = False
