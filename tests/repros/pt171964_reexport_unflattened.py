# https://github.com/pytorch/pytorch/issues/171964
# "`torch.export.export` on unflattened module fails for dynamic shapes": the second export, of
# the module `torch.export.unflatten` returns.
import torch


class AdapterBase(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.adapter = torch.nn.Linear(2, 2)
        self.act = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.adapter(x))


class Main(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.base = AdapterBase()

    def forward(self, x: torch.Tensor):
        return self.base(x)


x = torch.rand(2, 2)
program = torch.export.export(
    Main().eval(),
    args=(x,),
    dynamic_shapes=({0: torch.export.Dim.DYNAMIC(min=1, max=1024)},),
)
unflattened_module = torch.export.unflatten(program)

model = unflattened_module
example_args = (x,)
dynamic_shapes = ({0: torch.export.Dim.DYNAMIC(min=1, max=1024)},)  # error[PT403]
