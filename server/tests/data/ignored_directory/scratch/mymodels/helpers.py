import torch


def normalize(h):
    if h.mean() > 0:
        return h / h.norm(dim=-1, keepdim=True)
    return h
