"""A real DataLoader with workers, running as a training loop would: for watch, clean and the overhead benchmark.

    python tests/loaders/running.py [--seconds S] [--strategy file_system] [--kill]

Prints 'ready <main pid> <worker pids...>' once the first batch arrived. --kill: SIGKILL itself right after,
with the torch_shm_manager of its container (its cgroup), as a kill of the whole container does (an OOM kill of
the cgroup, a scheduler's): file_system segments stay behind. (The manager alone outlives the loader, and unlinks
them a second or two after its last client went: a leak, then, only until it does.)
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, sample_bytes: int):
        self.sample = torch.ones(sample_bytes // 4)

    def __len__(self) -> int:
        return 10**9

    def __getitem__(self, idx: int) -> torch.Tensor:
        return self.sample


def _shm_managers_of_this_cgroup() -> list[int]:
    """The torch_shm_manager processes in this process's cgroups (this container's, with --pid=host too)."""

    def read(path: str) -> str:
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""

    ours = read("/proc/self/cgroup")
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    managers = [p for p in pids if read(f"/proc/{p}/comm").strip() == "torch_shm_manag"]  # comm: 15 characters
    return [p for p in managers if read(f"/proc/{p}/cgroup") == ours]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--sample-bytes", type=int, default=256 * 1024)
    p.add_argument("--step", type=float, default=0.05, help="seconds of 'training' per batch")
    p.add_argument("--strategy", choices=["file_descriptor", "file_system"], default="file_descriptor")
    p.add_argument("--kill", action="store_true")
    args = p.parse_args()
    torch.multiprocessing.set_sharing_strategy(args.strategy)
    loader = DataLoader(Samples(args.sample_bytes), batch_size=args.batch_size, num_workers=args.num_workers)
    it = iter(loader)
    next(it)
    time.sleep(0.5)  # let the workers fill the prefetch queue
    print("ready", os.getpid(), *(w.pid for w in it._workers), flush=True)
    if args.kill:
        for pid in _shm_managers_of_this_cgroup():
            os.kill(pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        batch = next(it)  # held during the step, as a training loop holds it: the formula's '+1'
        time.sleep(args.step)
        del batch


if __name__ == "__main__":
    sys.exit(main())
