# https://github.com/pytorch/pytorch/issues/133653
# "Exporting ResNet-50 with dynamic batch dimension results in violated constraints" (example
# batch 1 on a Dim with min=1; torchvision's resnet50 with random weights, nothing downloaded).
import torch
from torch.export import Dim, export
from torchvision.models import resnet50

model = resnet50()
example_args = (torch.randn(1, 3, 224, 224),)  # error[PT405]
batch = Dim("batch", min=1, max=10)
dynamic_shapes = {
    "x": {0: batch}
}
strict = True
