"""What `shmdoctor watch` costs while a real DataLoader trains: CPU seconds per minute of watching.

    .venv/bin/python benchmarks/watch_overhead.py [--seconds 30]

Starts tests/loaders/running.py (2 workers, batches of 8 x 256 KiB, a 50 ms step: /dev/shm use changes all the
time, so watch rescans holders as often as it allows), then runs `shmdoctor watch --duration S` next to it with
the default settings and two others, and reads each watch's time on the CPU (/proc/<pid>/schedstat, in ns) after
its start-up and again S seconds later: the figure is the cost of watching itself, start-up left out.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from shmdoctor.probe import holders  # noqa: E402

WARMUP = 3.0  # seconds: Python, click and the first sample and scan are behind us
CONFIGS = [  # (label, watch arguments)
    ("default: --interval 0.5, holders every 2 s", []),
    ("statvfs only: --holders-every 0", ["--holders-every", "0"]),
    ("eager: --interval 0.1 --holders-every 0.1", ["--interval", "0.1", "--holders-every", "0.1"]),
]


def cpu_per_minute(args: list[str], seconds: float) -> float:
    """CPU seconds per minute that `shmdoctor watch ARGS` spends once started: its on-CPU time in nanoseconds
    (/proc/<pid>/schedstat) read after WARMUP and again `seconds` later, then Ctrl-C."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "watch", "--format", "json", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    try:
        time.sleep(WARMUP)
        before, t0 = _on_cpu_ns(proc.pid), time.monotonic()
        time.sleep(seconds)
        after, t1 = _on_cpu_ns(proc.pid), time.monotonic()
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait()
    if code != 130:
        raise SystemExit(f"watch {' '.join(args)} exited {code}, not 130 after Ctrl-C")
    return (after - before) / 1e9 / (t1 - t0) * 60


def _on_cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long each watch runs")
    args = parser.parse_args()

    loader = subprocess.Popen(
        [sys.executable, str(REPO / "tests/loaders/running.py"), "--seconds", str(args.seconds * 4 + 60)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        ready = loader.stdout.readline().split()
        if not ready or ready[0] != "ready":
            raise SystemExit("the DataLoader did not start")
        pids = {int(p) for p in ready[1:]}

        scans = []
        for _ in range(20):
            t = time.perf_counter()
            found = holders.scan()
            scans.append(time.perf_counter() - t)
        ours = [h for h in found.holders if h.pid in pids]
        processes = sum(1 for p in os.listdir("/proc") if p.isdigit())

        print(
            f"DataLoader: main pid {ready[1]}, workers {', '.join(ready[2:])}; they hold "
            f"{sum(len(h.segments) for h in ours)} segments now (unlinked: {sum(h.unlinked_count for h in ours)})"
        )
        print(
            f"one scan of /proc for holders: {statistics.median(scans) * 1000:.1f} ms median "
            f"({processes} processes on this machine, {os.cpu_count()} CPUs)"
        )
        print(f"\n{'watch settings':<46}{'CPU s / min':>12}{'% of a core':>13}")
        for label, extra in CONFIGS:
            per_minute = cpu_per_minute(extra, args.seconds)
            print(f"{label:<46}{per_minute:>12.2f}{per_minute / 60:>13.2%}")
    finally:
        loader.kill()
        loader.wait()


if __name__ == "__main__":
    main()
