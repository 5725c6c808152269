"""The adaptive sweep against the exhaustive one and against the seed's epochs, side by side, in one run.

    .venv/bin/python benchmarks/bench_adaptive.py [--device cpu|cuda] [--out DIR]

The seed's grid extended to 0..8 workers (1 MiB samples, 5 ms each, batch 100, a 0.2 s step; on CUDA pinned and
non-blocking, as the seed's script). Goal (issue 16): the adaptive sweep recommends what the exhaustive one does,
in at most half the time of one seed epoch per config over the grid. A seed epoch is the seed script's loop (1000
samples, 10 batches) with that config's workers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore", message="This DataLoader will create")  # 8 workers on a small machine
WORKERS = range(9)


class SeedDataset(torch.utils.data.Dataset):
    def __init__(self):
        self.tensor = torch.ones(2**18)

    def __len__(self) -> int:
        return 1000

    def __getitem__(self, idx: int) -> torch.Tensor:
        time.sleep(0.005)
        return self.tensor


def seed_epoch(workers: int, cuda: bool) -> float:
    start = time.perf_counter()
    for batch in torch.utils.data.DataLoader(SeedDataset(), batch_size=100, num_workers=workers, pin_memory=cuda):
        if cuda:
            batch.cuda(non_blocking=True)
        time.sleep(0.2)
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def bench(device: str, *extra: str) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "shmdoctor", "bench", "--sample-bytes", "1MiB", "--item-latency", "0.005"]
    cmd += [
        "--batch-size",
        "100",
        "--step-time",
        "0.2",
        "--num-workers",
        "0..8",
        "--device",
        device,
        "--format",
        "json",
    ]
    if device.startswith("cuda"):
        cmd += ["--pin-memory", "true", "--non-blocking", "true"]
    start = time.perf_counter()
    proc = subprocess.run([*cmd, *extra], capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if not proc.stdout.strip():
        sys.exit(f"bench failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, help="write both JSON documents there")
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    adaptive, adaptive_s = bench(args.device)
    exhaustive, exhaustive_s = bench(args.device, "--exhaustive")
    epochs = {w: seed_epoch(w, cuda) for w in WORKERS}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench-adaptive.json").write_text(json.dumps(adaptive, indent=2))
        (args.out / "bench-exhaustive.json").write_text(json.dumps(exhaustive, indent=2))

    def row(doc: dict, w: int) -> str:
        r = next(r for r in doc["results"] if r["num_workers"] == w)
        if r["status"] != "ok":
            return f"{r['status']:>8}  {'-':>7}  {'-':>6}"
        return f"{r['status']:>8}  {r['batch_seconds']:7.3f}  {r['wall_seconds']:6.2f}"

    print(f"device {args.device}; the seed's grid, num_workers 0..8; adaptive and exhaustive: status, s/batch, wall s")
    print(
        f"{'workers':>7}  {'seed epoch s':>12}  {'adaptive':>8}  {'s/batch':>7}  {'wall':>6}  "
        f"{'exhaust.':>8}  {'s/batch':>7}  {'wall':>6}"
    )
    for w in WORKERS:
        print(f"{w:>7}  {epochs[w]:12.2f}  {row(adaptive, w)}  {row(exhaustive, w)}")
    seed = sum(epochs.values())
    pick = {
        name: doc["recommendation"] and doc["recommendation"]["num_workers"]
        for name, doc in (("adaptive", adaptive), ("exhaustive", exhaustive))
    }
    ran = sum(r["status"] != "skipped" for r in adaptive["results"])
    print(f"one seed epoch per config over the grid: {seed:.1f} s")
    print(f"exhaustive: {exhaustive_s:.1f} s ({exhaustive_s / seed:.2f}x), recommends num_workers={pick['exhaustive']}")
    print(
        f"adaptive:   {adaptive_s:.1f} s ({adaptive_s / seed:.2f}x), {ran} of {len(adaptive['results'])} configs run, "
        f"recommends num_workers={pick['adaptive']}"
    )
    same = "the same recommendation" if pick["adaptive"] == pick["exhaustive"] else "DIFFERENT recommendations"
    goal = "met" if adaptive_s <= 0.5 * seed and pick["adaptive"] == pick["exhaustive"] else "NOT met"
    print(f"{same}; goal (same, in at most 0.5x): {goal}")


if __name__ == "__main__":
    main()
