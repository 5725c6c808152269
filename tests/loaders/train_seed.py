"""Iterate the seed's real DataLoader as a training loop would: exit 0 when every batch arrives, 1 with the error.

python tests/loaders/train_seed.py [--batches N] [--workers W] [--step SECONDS] [--preflight]
"""
from __future__ import annotations

import argparse
import sys
import time

import torch

sys.path.insert(0, "/src")
from tests.loaders.seed import SeedDataset  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--step", type=float, default=0.1)
    ap.add_argument("--preflight", action="store_true")
    args = ap.parse_args()
    loader = torch.utils.data.DataLoader(SeedDataset(length=100 * args.batches), batch_size=100,
                                         num_workers=args.workers)
    if args.preflight:
        import shmdoctor

        try:
            shmdoctor.preflight(loader)
        except shmdoctor.InsufficientSharedMemoryError as e:
            print(f"preflight: {type(e).__name__}: {e}", flush=True)
            return 3
    n = 0
    try:
        for batch in loader:
            assert batch.shape == (100, 2**18)
            n += 1
            time.sleep(args.step)  # the training step: slower than loading, so the loader reaches its peak
    except Exception as e:  # the failure is the result: print its last line, as a user would see it
        print(f"failed after {n} batches: {type(e).__name__}: {str(e).strip().splitlines()[-1]}", flush=True)
        return 1
    print(f"ok: {n} batches", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
