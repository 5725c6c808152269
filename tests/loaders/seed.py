"""The seed article's loader (batch 100 x 1 MiB float32 samples), and datasets of other shapes for --dataset tests."""

from __future__ import annotations

import time

import torch


class SeedDataset(torch.utils.data.Dataset):
    """The article's MyDataset: 1000 samples of 2**18 float32 ones (1 MiB), an optional load latency."""

    def __init__(self, length: int = 1000, item_latency: float = 0.0):
        self.tensor = torch.ones(2**18)
        self.length, self.item_latency = length, item_latency

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx: int) -> torch.Tensor:
        if self.item_latency:
            time.sleep(self.item_latency)
        return self.tensor


seed_set = SeedDataset()


class Nested(torch.utils.data.Dataset):
    """Samples as a dict holding a tuple: image 3x64x64 float32 (48 KiB), label int64, (mask 64x64 uint8, 4 KiB)."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, idx: int) -> dict:
        return {"image": torch.zeros(3, 64, 64), "label": idx, "extra": (torch.zeros(64, 64, dtype=torch.uint8),)}


def make_nested() -> Nested:
    return Nested()


class Broken(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 10

    def __getitem__(self, idx: int):
        raise ValueError("corrupt record 0")


broken = Broken()
words = ["a", "list", "of", "strings"]  # a dataset whose batches hold no tensor
not_a_dataset = 42
