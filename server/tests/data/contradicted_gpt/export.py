import torch
from torch.export import Dim

from gpt.config import GPTConfig
from gpt.model import GPT


def main():
    config = GPTConfig(block_size=32)
    vars(config).update({"block_size": 64})
    model = GPT(config).eval()
    idx = torch.randint(0, 100, (2, 8))
    seq = Dim("seq", max=64)
    ep = torch.export.export(model, (idx,), dynamic_shapes={"idx": {1: seq}})
    torch.export.save(ep, "gpt.pt2")


if __name__ == "__main__":
    main()
