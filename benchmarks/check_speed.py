"""How long `shmdoctor check` takes next to `python -c "import torch"`, pair by pair (goal, issue 27: at most 0.05
of it), and what check imports beyond Python's start and Click (`python -X importtime`), each with its own time.

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
CLICK = [sys.executable, "-c", "import click"]
GOAL = 0.05


def imported(argv: list[str]) -> dict[str, int]:
    """Module -> its own import time in microseconds, from `python -X importtime`."""
    err = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True).stderr
    rows = [line[len("import time:") :].split("|") for line in err.splitlines() if line.startswith("import time:")]
    return {name.strip(): int(own) for own, _, name in rows[1:]}


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
    verdict = "met" if statistics.median(ratios) <= GOAL else "NOT met"
    print(f"median ratio {statistics.median(ratios):.3f}, worst {max(ratios):.3f} (goal <= {GOAL}: {verdict})")
    base = imported(CLICK)
    own = {name: us for name, us in imported(CHECK).items() if name not in base}
    total = sum(own.values()) / 1000
    print(f"imported by check beyond Python's start and Click ({len(own)}, {total:.1f} ms own time):")
    print("  " + ", ".join(f"{name} {us / 1000:.1f}" for name, us in own.items()))


if __name__ == "__main__":
    main()
