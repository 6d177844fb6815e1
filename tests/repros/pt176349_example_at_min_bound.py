# https://github.com/pytorch/pytorch/issues/176349
# "Exporting a module with dynamic shape an example input the shape shape as the min boundry
# causes a failure" (CPU instead of CUDA).
import torch


# Simple model
class MLP(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x @ x.T)


model = MLP().eval()

# Define inputs with dynamic batch dim
inputs = [torch.randn(1, 128)]  # An example input that is the same shape as min shape

dynamic_shapes = ({0: torch.export.Dim("batch", min=1, max=32)},)  # Explicitly set the dynamic shape for tracing
example_args = tuple(inputs)  # error[PT405]
