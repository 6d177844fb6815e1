import torch.nn as nn

from .config import ModelConfig


class Net(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.max_batch = cfg.max_batch

    def forward(self, x):
        y = self.proj(x).relu()
        if x.shape[0] > self.max_batch:
            y = y * 0.5
        return y


def build_model(cfg: ModelConfig) -> Net:
    if cfg.hidden <= 0:
        raise ValueError(f"hidden must be positive, not {cfg.hidden}")
    return Net(cfg)
