import torch
from torch.export import Dim

from models import Net


def main():
    model = Net().eval()
    x = torch.randn(8, 16)
    torch.export.export(model, (x,), dynamic_shapes={"x": {0: Dim("batch", min=5)}})


if __name__ == "__main__":
    main()
