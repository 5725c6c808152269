"""How long `shmdoctor check` takes next to `python -c "import torch"`, pair by pair (goal: at most 0.15 of it).

    .venv/bin/python benchmarks/check_speed.py [--pairs 10]

Each pair runs both commands back to back as fresh processes, so both see the same machine state.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CHECK = [
    sys.executable,
    "-m",
    "shmdoctor",
    "check",
    "--batch-size",
    "100",
    "--num-workers",
    "4",
    "--sample-bytes",
    "1MiB",
]
TORCH = [sys.executable, "-c", "import torch"]


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10)
    pairs = ap.parse_args().pairs
    wall(CHECK), wall(TORCH)  # warm the page cache for both
    print(f"{'pair':>4}  {'check s':>8}  {'import torch s':>14}  {'ratio':>6}")
    ratios = []
    for i in range(pairs):
        check, torch = wall(CHECK), wall(TORCH)
        ratios.append(check / torch)
        print(f"{i + 1:>4}  {check:8.3f}  {torch:14.3f}  {check / torch:6.3f}")
    verdict = "met" if statistics.median(ratios) <= 0.15 else "NOT met"
    print(f"median ratio {statistics.median(ratios):.3f}, worst {max(ratios):.3f} (goal <= 0.15: {verdict})")


if __name__ == "__main__":
    main()
