"""Loaders of other shapes for run's instrumentation: python tests/loaders/shapes.py MODE

dict      samples {"image": 3x64x64 float32 (48 KiB), "label": int}, batch 8, 2 workers, default_collate
custom    the same samples through a collate of its own: {"x": stacked images, "y": a numpy array of the labels}
spawn     dict's loader with multiprocessing_context="spawn" (its workers start a new interpreter)
ddp       one loader per rank under torchrun (gloo): batch 10 x 64 KiB, 2 workers, all-reduced
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self) -> int:
        return 32

    def __getitem__(self, idx: int) -> dict:
        return {"image": torch.zeros(3, 64, 64), "label": idx}


class Vectors(Dataset):
    def __len__(self) -> int:
        return 40

    def __getitem__(self, idx: int) -> torch.Tensor:
        return torch.ones(16384)  # 64 KiB


def collate(samples: list) -> dict:
    return {"x": torch.stack([s["image"] for s in samples]), "y": np.array([s["label"] for s in samples])}


def ddp() -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    total = torch.zeros(1)
    for batch in DataLoader(Vectors(), batch_size=10, num_workers=2):
        total += batch.sum()
    dist.all_reduce(total)
    # one write a line: two ranks share the pipe, and print's text and newline are two writes unbuffered
    sys.stdout.write(f"rank {dist.get_rank()}: {int(total.item())}\n")
    sys.stdout.flush()
    dist.destroy_process_group()


def main() -> None:
    mode = sys.argv[1]
    if mode == "ddp":
        return ddp()
    options = {"collate_fn": collate} if mode == "custom" else {}
    if mode == "spawn":
        options["multiprocessing_context"] = "spawn"
    batches = sum(1 for _ in DataLoader(Images(), batch_size=8, num_workers=2, **options))
    print(f"{mode}: {batches} batches", flush=True)


if __name__ == "__main__":
    main()
