"""A training script that checks its DataLoader against /dev/shm before the first epoch.

The loader is the seed article's: 1 MiB samples, batch 100, 4 workers; it needs 900 MiB of /dev/shm
((prefetch 2 × 4 workers + 1) × 100 MiB). In a container with Docker's default 64 MiB, preflight stops it with the fix
instead of letting the first batch die with "unable to allocate shared memory".

    python examples/train.py [--batches 20] [--batch-size 100] [--workers 4] [--prefetch-factor 2] [--step 0.1]
                             [--no-preflight]
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import shmdoctor


class Samples(Dataset):
    """The article's dataset: float32 samples of 2**18 elements (1 MiB)."""

    def __init__(self, length: int):
        self.length, self.sample = length, torch.ones(2**18)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, idx: int) -> torch.Tensor:
        return self.sample


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--prefetch-factor", type=int, default=None)
    ap.add_argument("--step", type=float, default=0.1, help="seconds per training step (slower than loading)")
    ap.add_argument("--no-preflight", action="store_true", help="skip the check, to see the failure it prevents")
    args = ap.parse_args()

    loader = DataLoader(
        Samples(args.batch_size * args.batches),
        batch_size=args.batch_size,
        num_workers=args.workers,
        prefetch_factor=args.prefetch_factor,
    )
    if not args.no_preflight:
        try:
            report = shmdoctor.preflight(loader)
        except shmdoctor.InsufficientSharedMemoryError as e:
            print(f"preflight: {e}", file=sys.stderr)
            return 1
        print(f"preflight: {report.verdict}: needs {report.requirement.bytes >> 20} MiB of /dev/shm", flush=True)

    done = 0
    try:
        for _batch in loader:
            done += 1
            time.sleep(args.step)  # the training step
    except RuntimeError as e:  # what a user sees without the preflight: the last line of the worker's error
        print(f"failed after {done} batches: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
        return 1
    print(f"trained on {done} batches", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
