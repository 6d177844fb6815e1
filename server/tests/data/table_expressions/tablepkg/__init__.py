"""A small package whose model is built from a config dataclass, as an entrypoint table writes it."""
import torch

from .config import ModelConfig
from .model import Net, build_model

__all__ = ["ModelConfig", "Net", "build_model", "torch"]
