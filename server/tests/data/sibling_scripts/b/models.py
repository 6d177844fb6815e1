from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.shape[0] > 4:
            return x * 2
        return x
