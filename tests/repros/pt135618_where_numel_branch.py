# https://github.com/pytorch/pytorch/issues/135618
# "Real tensor prop for export fails for torch.where() call" (pianpwk): the model, exported the
# plain way (non-strict, no real-tensor propagation).
import torch


class Baz(torch.nn.Module):
    def forward(self, x):
        x = torch.where(x <= 0.5)[0]
        y = torch.randn(x.shape[0], 4)
        if y.numel() < 200:  # error[PT103]
            return x + y[:, 0]


model = Baz()
inputs = (torch.randn(64, 32),)
example_args = inputs
strict = False
