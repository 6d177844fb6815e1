# https://github.com/pytorch/pytorch/issues/140710
# "torch.where(condition) resolves to torch.where(condition, input, other) during export": the
# failing module, non-strict, batch dynamic.
import torch


class ModuleWithWhere(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0)


x = torch.rand(2, 10)
mod_where = ModuleWithWhere()
dynamic_shapes = ({0: torch.export.Dim("batch_size", max=100)},)

model = mod_where
example_args = (x,)
strict = False
