from dataclasses import dataclass


@dataclass
class ModelConfig:
    hidden: int = 16
    max_batch: int = 64
