# https://github.com/pytorch/pytorch/issues/146152
# "[torch.export] Cannot export TorchVision fasterrcnn_mobilenet_v3_large_fpn": random weights
# instead of the downloaded ones, torch.export.export instead of the since-removed
# export_for_training. The failure is inside torchvision (ops/boxes.py, batched_nms on a
# data-dependent number of boxes); no frame of this file is on its stack, so the mark is on the
# statement that builds the model.
import torch
import torchvision

model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None)  # error[PT103]
model.eval()

example_args = (torch.randn(1, 3, 224, 224),)
