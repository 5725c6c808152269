"""`shmdoctor bench` on the seed's experiment, on this machine's CPU, against one seed epoch per config.

    .venv/bin/python benchmarks/bench_vs_seed_epoch.py

The goal (issue 4): bench recommends 3 or 4 workers and spends at most 1.5x one seed epoch on each config. A seed
epoch here is the seed script's loop (1000 samples of 1 MiB, 5 ms each, batch 100, step 0.2 s) on the CPU: no CUDA.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore", message="This DataLoader will create")  # 4 workers on a 2-core machine


class SeedDataset(torch.utils.data.Dataset):
    def __init__(self):
        self.tensor = torch.ones(2**18)

    def __len__(self) -> int:
        return 1000

    def __getitem__(self, idx: int) -> torch.Tensor:
        time.sleep(0.005)
        return self.tensor


def seed_epoch(workers: int) -> float:
    start = time.perf_counter()
    for _ in torch.utils.data.DataLoader(SeedDataset(), batch_size=100, num_workers=workers):
        time.sleep(0.2)
    return time.perf_counter() - start


def main() -> None:
    cmd = [
        sys.executable,
        "-m",
        "shmdoctor",
        "bench",
        "--sample-bytes",
        "1MiB",
        "--item-latency",
        "0.005",
        "--batch-size",
        "100",
        "--step-time",
        "0.2",
        "--num-workers",
        "0,1,2,3,4",
        "--exhaustive",  # every config, each against its seed epoch (benchmarks/bench_adaptive.py: the search)
        "--format",
        "json",
    ]
    start = time.perf_counter()
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=False).stdout)
    total = time.perf_counter() - start
    print(f"{'workers':>7}  {'bench s':>8}  {'seed epoch s':>12}  {'ratio':>6}  {'s/batch':>8}")
    for r in doc["results"]:
        epoch = seed_epoch(r["num_workers"])
        print(
            f"{r['num_workers']:>7}  {r['wall_seconds']:8.2f}  {epoch:12.2f}  {r['wall_seconds'] / epoch:6.2f}  "
            f"{r['batch_seconds']:8.3f}"
        )
    print(
        f"bench in all: {total:.1f} s (the first config includes the one import of torch); "
        f"recommendation: num_workers={doc['recommendation']['num_workers']}"
    )


if __name__ == "__main__":
    main()
