"""What `shmdoctor run` costs: its own CPU while it wraps a command, and the seed loop's time with and without it.

    .venv/bin/python benchmarks/run_overhead.py [--seconds 20] [--repeat 3] [--batches 30]

1. `shmdoctor run -- sleep S` with the default settings: run's on-CPU time (/proc/<pid>/schedstat, in ns) read
   after its start-up and again just before the command ends, as a share of one core.
2. The seed loop (tests/loaders/failing.py seed: batch 100 x 1 MiB, 4 workers, no step: loading-bound, the worst
   case for a sampler that competes for the CPU), its own loop time as it prints it, alone and under
   `shmdoctor run`, alternated; medians.
3. The instrumentation alone (the sitecustomize run puts on the child's PYTHONPATH): a Python start-up
   (`python -c pass`), a start-up that imports torch's DataLoader (the hook patches it), with and without, and the
   seed loop under run with it and with --no-instrument; medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WARMUP = 2.0
RUN = [sys.executable, "-m", "shmdoctor", "run", "--"]


def on_cpu_ns(pid: int) -> int:
    """Every thread of the process (the sampler and the stderr tee are threads of their own)."""
    total = 0
    for tid in Path(f"/proc/{pid}/task").iterdir():
        total += int((tid / "schedstat").read_text().split()[0])
    return total


def idle_cost(seconds: float) -> float:
    """Share of one core that run spends sampling around a command that does nothing."""
    proc = subprocess.Popen([*RUN, "sleep", str(seconds + WARMUP + 1)], cwd=REPO, stderr=subprocess.DEVNULL)
    time.sleep(WARMUP)
    first, t0 = on_cpu_ns(proc.pid), time.monotonic()
    time.sleep(seconds)
    used, elapsed = on_cpu_ns(proc.pid) - first, time.monotonic() - t0
    proc.wait()
    return used / 1e9 / elapsed


def loop_seconds(wrapped: bool, batches: int, *options: str) -> float:
    """The loop's own time, as it prints it: start-up (imports, run's facts) left out."""
    cmd = [sys.executable, "tests/loaders/failing.py", "seed", "--batches", str(batches), "--step", "0"]
    run = [*RUN[:-1], *options, "--"]
    out = subprocess.run([*run, *cmd] if wrapped else cmd, cwd=REPO, check=True, capture_output=True, text=True)
    return float(out.stdout.split(" in ")[1].split()[0])


def start_up(code: str, instrumented: bool, repeat: int) -> float:
    """Median wall time of a Python that runs code, with or without the sitecustomize run gives its child."""
    from shmdoctor.wrap import instrument

    times = []
    with tempfile.TemporaryDirectory() as channel:
        env = instrument.environment(channel) if instrumented else dict(os.environ)
        for _ in range(repeat):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batches", type=int, default=30)
    args = ap.parse_args()
    share = idle_cost(args.seconds)
    print(f"run's own CPU around `sleep`: {share:.3%} of one core (sampling every 0.1 s, holders every 10 s)")
    alone, wrapped = [], []
    for _ in range(args.repeat):
        alone.append(loop_seconds(False, args.batches))
        wrapped.append(loop_seconds(True, args.batches))
    a, w = statistics.median(alone), statistics.median(wrapped)
    print(f"seed loop, {args.batches} batches of 100 MiB, 4 workers, no step (medians of {args.repeat}):")
    print(f"  alone {a:.2f} s   under run {w:.2f} s   difference {w - a:+.2f} s ({(w - a) / a:+.1%})")
    print(f"  runs alone: {', '.join(f'{x:.2f}' for x in alone)}; under run: {', '.join(f'{x:.2f}' for x in wrapped)}")
    print("the instrumentation (run's sitecustomize in the child), medians:")
    for what, code, n in (("python -c pass", "pass", 20), ("import torch.utils.data", "import torch.utils.data", 5)):
        off, on = start_up(code, False, n), start_up(code, True, n)
        print(f"  {what:<24} without {off * 1000:7.1f} ms   with {on * 1000:7.1f} ms   ({(on - off) * 1000:+.1f} ms)")
    plain, measured = [], []
    for _ in range(args.repeat):
        plain.append(loop_seconds(True, args.batches, "--no-instrument"))
        measured.append(loop_seconds(True, args.batches))
    p, m = statistics.median(plain), statistics.median(measured)
    print(f"  seed loop under run: --no-instrument {p:.2f} s   instrumented {m:.2f} s   ({(m - p) / p:+.1%})")


if __name__ == "__main__":
    main()
