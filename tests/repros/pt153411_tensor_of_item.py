# https://github.com/pytorch/pytorch/issues/153411
# "[export] torch.tensor constructor specializes on float value" (pianpwk).
import torch


# fails
class Foo(torch.nn.Module):
    def forward(self, flt):
        scalar = flt.item()
        return torch.tensor([scalar])


model = Foo()
example_args = (torch.tensor([3.14]),)
