"""The seed's dataset, sized and slowed at will: one sample tensor returned for every index, after a sleep."""

from __future__ import annotations

import time


class SyntheticDataset:
    """Map-style: `sample_bytes` bytes a sample (uint8), `latency` seconds of loading work per sample."""

    def __init__(self, length: int, sample_bytes: int, latency: float = 0.0):
        import torch

        self.length, self.latency = length, latency
        self.sample = torch.ones(sample_bytes, dtype=torch.uint8)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        if index >= self.length:
            raise IndexError(index)
        if self.latency:
            time.sleep(self.latency)
        return self.sample
