# https://github.com/pytorch/pytorch/issues/148779
# "[Export Benchmark] non-strict export doesn't work with .numpy on Kokoro model" (tugsbayasgalan).
import torch


class Foo(torch.nn.Module):
    def forward(self, x):
        a = x.numpy()  # error[PT201]
        return x + x.numpy().sum()  # error[PT201]


model = Foo()
example_args = (torch.randn(10, 10),)
strict = False
