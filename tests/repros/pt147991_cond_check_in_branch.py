# https://github.com/pytorch/pytorch/issues/147991
# "Verifier (in torch.export.export) does not make use of if-condition inside branches".
import torch


class MyModule(torch.nn.Module):
    def __init__(self):
        super(MyModule, self).__init__()

    def forward(self, X):
        def true_fn(X):
            bs, sl, n = X.shape
            torch._check(sl > 5)  # error[PT401]
            return X + 1

        def false_fn(X):
            return X + 2

        bs, sl, n = X.shape
        return torch.cond(sl > 5, true_fn, false_fn, (X,))


model = MyModule()
model.eval()

batch_dim = torch.export.Dim("batch_size")
sequence_dim = torch.export.Dim("sequence_length")

dynamic_shapes = {
    "X": {0: batch_dim, 1: sequence_dim},
}

B = 2
S = 700
N = 12

X = torch.rand(B, S, N)
example_args = (X,)
strict = True
