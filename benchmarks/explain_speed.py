"""How fast `shmdoctor explain` reads a big log, and with how much memory: a generated log (default 1 GiB) of
ordinary training lines with one failure near its end, read through GNU grep (the fast path) and through the
Python loop (no grep on PATH). Then (issue 38) a log of --lines failure lines, every one a match (a job that
printed its error once a batch), against a log of as many ordinary lines of the same length, in the same run: the
ratio of their times, on each path (the promise: at most 2x).

    .venv/bin/python benchmarks/explain_speed.py [--mib 1024] [--lines 3000000]

Prints, for each path: seconds, MB/s, the peak resident memory of the explain process (getrusage of the children:
grep's included), and what it found; then the two logs' times and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINE = (
    b"2026-12-01 04:55:12,123 INFO trainer.py:123 -- epoch 3 step 1200/5000 loss=0.2341 lr=0.0003 "
    b"throughput 1234.5 samples/s grad_norm=0.87 mem=10.2GiB\n"
)
FAILURE = b"RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)\n"


def make_log(path: Path, mib: int) -> int:
    block = LINE * (2**20 // len(LINE))
    with open(path, "wb") as f:
        for i in range(mib):
            f.write(block)
            if i == mib - 2:
                f.write(FAILURE)
    return path.stat().st_size


def explain(path: Path, env: dict) -> tuple[float, int, dict]:
    """(seconds, peak RSS in bytes of the explain process tree, its JSON) for one run in a fresh subprocess."""
    probe = (
        "import resource, subprocess, sys, time; t = time.monotonic(); "
        "p = subprocess.run(sys.argv[1:], capture_output=True); "
        "print(time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.stdout.flush(); sys.stdout.buffer.write(p.stdout)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "shmdoctor", "explain", str(path), "--format", "json"],
        capture_output=True,
        env=env,
        cwd=REPO,
        check=False,
    ).stdout
    head, _, doc = out.partition(b"\n")
    seconds, rss_kib = head.split()
    return float(seconds), int(rss_kib) * 1024, json.loads(doc)


PATHS = (("grep -F (fast path)", False), ("python loop (no grep)", True))


def repeated(d: Path, lines: int, env: dict, nogrep: Path) -> None:
    """--lines failure lines against as many match-free lines of the same length: each path's two times, and
    their ratio."""
    matching, plain = Path(d) / "matching.log", Path(d) / "plain.log"
    ordinary = LINE[: len(FAILURE) - 1].ljust(len(FAILURE) - 1, b" ") + b"\n"  # the same bytes a line
    for path, line in ((matching, FAILURE), (plain, ordinary)):
        with open(path, "wb") as f:
            for _ in range(lines // 10_000):
                f.write(line * 10_000)
    size = matching.stat().st_size
    print(f"two logs of {size / 2**20:.0f} MiB, {lines:,} lines each: every line a failure, and none")
    for label, loop in PATHS:
        times = {}
        for name, path in (("matching", matching), ("match-free", plain)):
            times[name], _, doc = explain(path, {**env, **({"PATH": str(nogrep)} if loop else {})})
            if name == "matching":
                assert [d["count"] for d in doc["diagnoses"]] == [lines], doc["diagnoses"]
        print(
            f"{label:<24} matching {times['matching']:6.1f} s  match-free {times['match-free']:6.1f} s  "
            f"ratio {times['matching'] / times['match-free']:4.1f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--lines", type=int, default=3_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "train.log"
        nogrep = Path(d) / "bin"
        nogrep.mkdir()  # a PATH without grep: the Python loop
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        if args.mib:
            size = make_log(path, args.mib)
            print(f"log: {size / 2**20:.0f} MiB, {size // len(LINE)} lines, one failure near the end")
            for label, loop in PATHS:
                seconds, rss, doc = explain(path, {**env, **({"PATH": str(nogrep)} if loop else {})})
                found = [(d["signature"], d["line"]) for d in doc["diagnoses"]]
                print(
                    f"{label:<24} {seconds:6.1f} s  {size / seconds / 1e6:7.0f} MB/s  "
                    f"peak RSS {rss / 2**20:5.0f} MiB  found {found}"
                )
            path.unlink()
        if args.lines:
            repeated(Path(d), args.lines, env, nogrep)
    print(f"(this machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; ru_maxrss of the largest child)")


if __name__ == "__main__":
    main()
