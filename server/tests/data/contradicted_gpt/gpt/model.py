import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)

    def forward(self, idx):
        b, t = idx.size()
        limit = self.config.block_size
        assert t <= limit, f"Cannot forward sequence of length {t}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        return self.wte(idx) + self.wpe(pos)
