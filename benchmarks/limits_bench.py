"""What lint costs at its input limits (YAML 8 MiB, JSON 32 MiB), and what refusing past them costs: prints figures,
asserts nothing. docs/limits.md's table quotes them.

.venv/bin/python benchmarks/limits_bench.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shmdoctor.limits import MAX_JSON_BYTES, MAX_YAML_BYTES

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "manifests"
LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
SERVICE = "  svc{}:\n    image: registry.example.com/team/trainer:1\n    shm_size: 2g\n    mem_limit: 8g\n"


def compose(size: int) -> str:
    n = size // len(SERVICE.format(99999))
    return "services:\n" + "".join(SERVICE.format(i) for i in range(n))


def pods(size: int) -> str:
    sample = json.loads((DATA / "kubectl-get-pods.json").read_text())["items"]
    each = sum(len(json.dumps(p)) for p in sample) // len(sample) + 20
    items = [
        dict(sample[i % len(sample)], metadata={**sample[i % len(sample)]["metadata"], "name": f"pod-{i}"})
        for i in range(size // each)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def lint(path: Path) -> tuple[float, float, int]:
    """(seconds, peak MiB of the child, exit code) of `shmdoctor lint path` with the seed's loader, as text."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "lint", str(path), *LOADER],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest of all so far
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, child.returncode


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("compose.yml", compose(MAX_YAML_BYTES - 2**16), "YAML just under its limit"),
            ("pods.json", pods(MAX_JSON_BYTES - 2**20), "JSON just under its limit"),
            ("big.yml", compose(50 * 2**20), "50 MB of YAML: refused"),
        ]
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"{'input':<28} {'MiB':>6} {'seconds':>8} {'peak MiB':>9} {'exit':>5}")
        for name, text, what in cases:
            path = Path(tmp) / name
            path.write_text(text)
            seconds, peak, code = lint(path)
            print(f"{what:<28} {len(text) / 2**20:>6.1f} {seconds:>8.2f} {peak:>9.0f} {code:>5}")


if __name__ == "__main__":
    main()
