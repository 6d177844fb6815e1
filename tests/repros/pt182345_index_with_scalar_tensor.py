# https://github.com/pytorch/pytorch/issues/182345
# "`torch.export` fails when indexing with a scalar tensor" (ar0ck).
import torch


class Module(torch.nn.Module):
    def forward(self, operand: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        return operand[indices]


module = Module()
data = torch.empty(1), torch.tensor(0)

module(*data)  # works
model = module
example_args = data
