# https://github.com/pytorch/pytorch/issues/170548
# "unable to export a model with bucketize" (xadupre).
import torch


class Model(torch.nn.Module):
    def forward(self, mask):
        num_patches_per_side = 5
        boundaries = torch.arange(
            torch.tensor(1 / num_patches_per_side, dtype=torch.float32),
            torch.tensor(1.0, dtype=torch.float32),
            torch.tensor(1 / num_patches_per_side, dtype=torch.float32),
        )
        w_len = torch.tensor(1, dtype=boundaries.dtype) / mask.sum()
        torch._check(w_len.item() > 0)
        fractional_coords_w = torch.arange(
            torch.tensor(0.0, dtype=boundaries.dtype),
            torch.tensor(1 - 1e-6, dtype=boundaries.dtype),
            w_len,
        )
        bucket_coords_h = torch.bucketize(fractional_coords_w, boundaries, right=True)
        return bucket_coords_h


model = Model()
x = torch.zeros((10,), dtype=torch.bool)
x[::2] = True
expected = model(x)
example_args = (x,)
dynamic_shapes = ({0: torch.export.Dim.DYNAMIC},)
