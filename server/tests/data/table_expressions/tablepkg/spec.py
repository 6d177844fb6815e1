from torch.export import Dim

DYNAMIC_SHAPES = {"x": {0: Dim("batch", min=2, max=64)}}
