"""`shmdoctor bench` on the CPU as a user waits for it, against the seed's experiment, each a `docker run` of the
same image with the same flags, in pairs (bench then seed, seed then bench, ...: both see the same load).

    .venv/bin/python benchmarks/bench_in_container.py [--pairs 3] [--exhaustive] [--src CHECKOUT]

The seed's workload (1 MiB samples, 5 ms each, batch 100, a 0.2 s step), num_workers 0..8 on the CPU. The seed's side
is its script as a user runs it: a fresh process (Python, `import torch`) timing one epoch (1000 samples, 10 batches)
per worker count. Goal (issue 27): the default sweep costs at most 0.5x of it, and recommends what `--exhaustive`
does (the same num_workers, or one the exhaustive run's own figures put at the knee too, as bench's at_knee says).
Each run is a container named sdt-bench-speed-PID-N (test image shmdoctor-test/python:1, this checkout, or --src,
bind-mounted read-only at /src), removed when it ends (--rm).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

IMAGE = "shmdoctor-test/python:1"
ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 0.05  # bench's own (shmdoctor.bench.sweep.TOLERANCE)
BENCH = "python3 -m shmdoctor bench --sample-bytes 1MiB --item-latency 0.005 --batch-size 100 --step-time 0.2"
BENCH += " --num-workers 0..8 --device cpu --format json"
SEED = """
import json, time, torch
class MyDataset(torch.utils.data.Dataset):
    def __init__(self):
        self.tensor = torch.ones(1 * 2**18)
    def __len__(self):
        return 1000
    def __getitem__(self, idx):
        time.sleep(0.005)
        return self.tensor
epochs = {}
for num_workers in range(9):
    start = time.perf_counter()
    for batch in torch.utils.data.DataLoader(MyDataset(), batch_size=100, num_workers=num_workers):
        time.sleep(0.2)
    epochs[num_workers] = time.perf_counter() - start
print(json.dumps(epochs))
"""
runs = 0
src = ROOT


def docker_run(command: list[str]) -> tuple[float, str]:
    """Wall seconds of `docker run` of `command` in the image, as a user waits for it, and its stdout."""
    global runs
    runs += 1
    name = f"sdt-bench-speed-{os.getpid()}-{runs}"
    argv = ["docker", "run", "--rm", "--name", name, "--network", "none", "--shm-size=4g", "-v", f"{src}:/src:ro"]
    start = time.perf_counter()
    proc = subprocess.run([*argv, IMAGE, *command], capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{command[:3]} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return took, proc.stdout


def bench(*extra: str) -> tuple[float, dict]:
    took, out = docker_run(["sh", "-c", f"cd /tmp && {BENCH} {' '.join(extra)}"])
    return took, json.loads(out)


def seed() -> tuple[float, dict]:
    took, out = docker_run(["python3", "-W", "ignore", "-c", SEED])
    return took, json.loads(out)


def pick(doc: dict) -> str:
    rec = doc["recommendation"]
    return "nothing" if rec is None else f"num_workers={rec['num_workers']}"


def at_knee(row: dict, best: float) -> bool:
    """shmdoctor.bench.sweep.at_knee on a result's JSON: within the tolerance of the fastest, or twice it for a loop
    that no longer waits for data (a wait of at most 2 ms, or 5% of its batch)."""
    t, wait = row["batch_seconds"], row["data_wait_seconds"] or 0.0
    return t <= best * (1 + TOLERANCE) or (wait <= max(0.002, 0.05 * t) and t <= best * (1 + 2 * TOLERANCE))


def compare(doc: dict, full: dict) -> str:
    """The default sweep's pick against the exhaustive run's: the same num_workers, or one the exhaustive run's own
    figures put at the knee too (at_knee)."""
    rows = {r["num_workers"]: r for r in full["results"] if r["status"] == "ok" and r["batch_seconds"]}
    w, best = doc["recommendation"]["num_workers"], min(r["batch_seconds"] for r in rows.values())
    if w == full["recommendation"]["num_workers"]:
        verdict = "the same"
    else:
        verdict = "within tolerance" if w in rows and at_knee(rows[w], best) else "NOT the same"
    figures = ", ".join(f"{n}: {r['batch_seconds']:.3f}" for n, r in rows.items())
    return f"{pick(doc)}: {verdict} as --exhaustive's {pick(full)} (its s/batch {figures})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--exhaustive", action="store_true", help="and an --exhaustive run after each pair")
    parser.add_argument("--src", type=Path, default=ROOT, help="the checkout whose bench runs (default: this one)")
    args = parser.parse_args()
    global src
    src = args.src.resolve()
    benches, seeds, same = [], [], 0
    for i in range(args.pairs):
        load = os.getloadavg()[0]
        order = (bench, seed) if i % 2 == 0 else (seed, bench)
        got = {f.__name__: f() for f in order}
        (b, doc), (s, epochs) = got["bench"], got["seed"]
        benches.append(b)
        seeds.append(s)
        ran = [r for r in doc["results"] if r["status"] != "skipped"]
        configs = ", ".join(f"{r['num_workers']}: {r['wall_seconds']:.1f} s" for r in ran)
        print(
            f"pair {i + 1} (load {load:.1f} -> {os.getloadavg()[0]:.1f}): bench {b:.1f} s ({len(ran)} configs: "
            f"{configs}; timeline {json.dumps(doc.get('timeline'))}), {pick(doc)}; seed {s:.1f} s (epochs "
            + ", ".join(f"{w}: {t:.1f}" for w, t in epochs.items())
            + f"): {b / s:.2f}x"
        )
        if args.exhaustive:
            took, full = bench("--exhaustive")
            said = compare(doc, full)
            same += "NOT" not in said
            print(f"  then --exhaustive, {took:.1f} s: {said}")
    b, s = statistics.median(benches), statistics.median(seeds)
    print(f"median of {args.pairs} pairs: bench {b:.1f} s, the seed's script {s:.1f} s: {b / s:.2f}x (goal <= 0.5x)")
    if args.exhaustive:
        print(f"the default sweep's pick as the exhaustive run's beside it: {same} of {args.pairs}")


if __name__ == "__main__":
    main()
