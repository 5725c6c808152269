"""The default sweep against the exhaustive one and against the seed's two experiments, side by side, in one run.

    .venv/bin/python benchmarks/bench_adaptive.py [--device cpu|cuda] [--out DIR]

The seed's workload (1 MiB samples, 5 ms each, batch 100, a 0.2 s step), num_workers 0..8, as a user runs bench:
`--num-workers 0..8`, and on CUDA the default grid (pin_memory x non_blocking). Goal (issue 27): the default sweep
costs at most half of the seed's two experiments widened to the same grid, and recommends what `--exhaustive` does
(the same num_workers; pin_memory / non_blocking within the bench's tolerance). The seed's experiments, as its scripts
run them: one epoch (1000 samples, 10 batches) per worker count, pinned and non-blocking on CUDA; then (CUDA) one
epoch of its second script (no load latency) per pin_memory / non_blocking pair at the recommended workers.
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
PAIRS = [(True, True), (True, False), (False, True), (False, False)]
TOLERANCE = 0.05  # bench's own (shmdoctor.bench.sweep.TOLERANCE)


class SeedDataset(torch.utils.data.Dataset):
    def __init__(self, latency: float):
        self.tensor, self.latency = torch.ones(2**18), latency

    def __len__(self) -> int:
        return 1000

    def __getitem__(self, idx: int) -> torch.Tensor:
        if self.latency:
            time.sleep(self.latency)
        return self.tensor


def seed_epoch(workers: int, cuda: bool, pin: bool = True, non_blocking: bool = True, latency: float = 0.005) -> float:
    start = time.perf_counter()
    loader = torch.utils.data.DataLoader(
        SeedDataset(latency), batch_size=100, num_workers=workers, pin_memory=cuda and pin
    )
    for batch in loader:
        if cuda:
            batch.to("cuda:0", non_blocking=non_blocking)
        time.sleep(0.2)
    if cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def bench(device: str, *extra: str) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "shmdoctor", "bench", "--sample-bytes", "1MiB", "--item-latency", "0.005"]
    cmd += ["--batch-size", "100", "--step-time", "0.2", "--num-workers", "0..8", "--device", device]
    start = time.perf_counter()
    proc = subprocess.run([*cmd, "--format", "json", *extra], capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if not proc.stdout.strip():
        sys.exit(f"bench failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), took


def pick(doc: dict) -> str:
    rec = doc["recommendation"]
    if rec is None:
        return "nothing"
    return f"num_workers={rec['num_workers']}, pin_memory={rec['pin_memory']}, non_blocking={rec['non_blocking']}"


def cell(r: dict) -> str:
    if r["status"] != "ok":
        return f"{r['status']:>8} {'-':>6} {'-':>6}"
    return f"{r['status']:>8} {r['batch_seconds']:6.3f} {r['wall_seconds']:6.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path, help="write both JSON documents there")
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    default, default_s = bench(args.device)
    exhaustive, exhaustive_s = bench(args.device, "--exhaustive")
    epochs = {w: seed_epoch(w, cuda) for w in WORKERS}
    at = default["recommendation"]["num_workers"]
    pairs = {p: seed_epoch(at, cuda, *p, latency=0.0) for p in PAIRS} if cuda else {}
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench-default.json").write_text(json.dumps(default, indent=2))
        (args.out / "bench-exhaustive.json").write_text(json.dumps(exhaustive, indent=2))

    print(f"device {args.device}; the seed's workload, num_workers 0..8; each config: status s/batch wall s")
    grid = [(r["num_workers"], r["pin_memory"], r["non_blocking"]) for r in exhaustive["results"]]
    rows = {name: {(r["num_workers"], r["pin_memory"], r["non_blocking"]): r for r in doc["results"]}
            for name, doc in (("default", default), ("exhaustive", exhaustive))}  # fmt: skip
    print(f"{'workers':>7} {'pin':>5} {'nb':>5}  {'seed epoch s':>12}  {'default sweep':>22}  {'exhaustive':>22}")
    for key in grid:
        w, pair = key[0], key[1:]
        epoch = epochs[w] if pair == (True, True) or not cuda else pairs.get(pair) if w == at else None
        cells = [cell(rows[name][key]) for name in ("default", "exhaustive")]
        print(f"{w:>7} {pair[0]!s:>5} {pair[1]!s:>5}  {'-' if epoch is None else f'{epoch:.2f}':>12}  ", end="")
        print(f"{cells[0]:>22}  {cells[1]:>22}")
    seed = sum(epochs.values()) + sum(pairs.values())
    ran = sum(r["status"] != "skipped" for r in default["results"])
    what = f"{len(epochs)} epochs, one per worker count" + (f", and {len(pairs)}, one per pair at {at}" if cuda else "")
    print(f"the seed's experiments ({what}): {seed:.1f} s")
    print(f"exhaustive:    {exhaustive_s:6.1f} s ({exhaustive_s / seed:.2f}x), recommends {pick(exhaustive)}")
    print(f"default sweep: {default_s:6.1f} s ({default_s / seed:.2f}x), {ran} of {len(default['results'])} configs "
          f"run, recommends {pick(default)}")  # fmt: skip
    ours, theirs = default["recommendation"], exhaustive["recommendation"]
    same_workers = ours["num_workers"] == theirs["num_workers"]
    # pin_memory / non_blocking: the same, or within the tolerance of each other in the exhaustive run's own figures
    mine = rows["exhaustive"][(ours["num_workers"], ours["pin_memory"], ours["non_blocking"])]["batch_seconds"]
    alike = same_workers and mine <= theirs["batch_seconds"] * (1 + TOLERANCE)
    noise = ", ".join(
        f"num_workers={r['num_workers']}, pin_memory={r['pin_memory']}, non_blocking={r['non_blocking']}"
        for r in ours.get("within_noise") or []
    )
    print(f"within noise of the default sweep's pick, it says: {noise or 'none'}")
    verdict = "the same" if pick(default) == pick(exhaustive) else "within tolerance" if alike else "NOT the same"
    goal = "met" if default_s <= 0.5 * seed and alike else "NOT met"
    print(f"recommendation: {verdict}; goal (as exhaustive's, in at most 0.5x of the seed's experiments): {goal}")
    print("timeline of the default sweep, seconds from its start:", json.dumps(default.get("timeline")))


if __name__ == "__main__":
    main()
