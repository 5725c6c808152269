"""How `shmdoctor audit` scales: 1 container vs 60, next to `docker inspect` of all at once and a shell loop of
`docker inspect` per container. Starts 60 busybox containers (sdt-audit-bench-*, 4 at a time, no network), prints
the figures, removes them (4 at a time, whatever happens).

    .venv/bin/python benchmarks/audit_bench.py [--containers 60] [--runs 11]

The goals (issue 27): auditing 60 running containers costs at most 0.3x the shell loop over them; 200 containers
at most 1.2x one (issue 3 asked 1.5x of one for 60).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

BUSYBOX = "shmdoctor-test/busybox:1"
TAG = f"sdt-audit-bench={os.getpid()}"
LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]


def start(i: int) -> str:
    name = f"sdt-audit-bench-{os.getpid()}-{i:02d}"
    labels = ["--label", TAG] + (["--label", f"sdt-audit-bench-one={os.getpid()}"] if i == 0 else [])
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--network",
            "none",
            "--name",
            name,
            *labels,
            f"--shm-size={64 + i}m",
            BUSYBOX,
            "sleep",
            "600",
        ],
        check=True,
        capture_output=True,
    )
    return name


def remove() -> None:
    """Every container of this run (by its label: those a failed start left too), 4 at a time: the engine is shared,
    and one `docker rm -f` of 200 holds it for a long while."""
    listed = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={TAG}"], capture_output=True, text=True)
    names = listed.stdout.split()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda name: subprocess.run(["docker", "rm", "-f", name], capture_output=True), names))


def timed(argv: list[str], runs: int, shell: bool = False) -> float:
    """Median wall time in seconds of `runs` runs (after one warm-up run)."""
    times = []
    for n in range(runs + 1):
        t = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, shell=shell)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{argv if not shell else argv[:80]} failed: {proc.stderr.decode()[-300:]}")
        if n:
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def engine_alone(label: str, names: list[str], runs: int) -> float:
    """Median seconds the engine takes to answer the list (by `label`) and these inspects, 8 in flight over kept-alive
    connections, asked from this process (no interpreter to start, nothing judged): the floor under an audit of them."""
    from shmdoctor.probe.engine_socket import SocketAPI

    api = SocketAPI((os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock")[len("unix://") :], 30, 8)
    times = []
    with ThreadPoolExecutor(8) as pool:
        for n in range(runs + 1):
            t = time.perf_counter()
            api.containers(filters={"label": [label]})
            list(pool.map(api.inspect_container, names))
            if n:
                times.append(time.perf_counter() - t)
    api.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--containers", type=int, default=60)
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    n = args.containers
    audit = [sys.executable, "-m", "shmdoctor", "audit", "--format", "json", *LOADER]
    names: list[str] = []
    try:
        with ThreadPoolExecutor(4) as pool:
            for name in pool.map(start, range(n)):
                names.append(name)
        cases = [
            (
                "shmdoctor audit",
                audit + ["--filter", f"label=sdt-audit-bench-one={os.getpid()}"],
                audit + ["--filter", f"label={TAG}"],
                False,
            ),
            ("docker inspect <all at once>", ["docker", "inspect", names[0]], ["docker", "inspect", *names], False),
            (
                "shell loop of docker inspect",
                f"for c in {names[0]}; do docker inspect $c >/dev/null; done",
                f"for c in {' '.join(names)}; do docker inspect $c >/dev/null; done",
                True,
            ),
        ]
        print(f"{n} running busybox containers, median of {args.runs} runs each, {os.cpu_count()} CPUs")
        print(f"{'':<30}{'1 container':>13}{f'{n} containers':>15}{'ratio':>8}{'per extra container':>22}")
        figures = {}
        for label, one, many, shell in cases:
            t1, tn = figures[label] = timed(one, args.runs, shell), timed(many, args.runs, shell)
            print(
                f"{label:<30}{t1 * 1000:>10.0f} ms{tn * 1000:>12.0f} ms{tn / t1:>7.2f}x"
                f"{(tn - t1) / (n - 1) * 1000:>17.1f} ms"
            )
        t1, tn = (
            engine_alone(f"sdt-audit-bench-one={os.getpid()}", names[:1], args.runs),
            engine_alone(TAG, names, args.runs),
        )
        print(
            f"{'the engine alone':<30}{t1 * 1000:>10.0f} ms{tn * 1000:>12.0f} ms{tn / t1:>7.2f}x"
            f"{(tn - t1) / (n - 1) * 1000:>17.1f} ms"
        )
        (one, audit_n), (_, loop_n) = figures["shmdoctor audit"], figures["shell loop of docker inspect"]
        print(f"the engine's answers for {n - 1} more containers: {(tn - t1) / one:.2f}x of audit of 1")
        print(f"audit of {n} against the shell loop over them: {audit_n / loop_n:.2f}x (goal at 60: <= 0.3x)")
        print(f"audit of {n} against audit of 1: {audit_n / one:.2f}x (goal at 200: <= 1.2x)")
    finally:
        remove()


if __name__ == "__main__":
    main()
