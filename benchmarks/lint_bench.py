"""How fast lint reads a large cluster dump and a large multi-document manifest, and how much more `--fix` and
`--diff` take on a compose file of many failing services (each has a comment on the line --fix changes) and on a
manifest of as many failing pods (--fix adds a volume and its mount to each): prints figures, asserts nothing. The
promise (issue 38): --fix at most 3x plain lint of the same file, and 10x the services
at most 12x the time.

.venv/bin/python benchmarks/lint_bench.py [PODS] [SERVICES]
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

from shmdoctor.cli import main

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "manifests"


def timed(args: list[str]) -> float:
    return clocked(args)[0]


def clocked(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of the CLI in this process: on a shared machine the CPU time is what
    the run itself cost, the wall time that and what others took from it."""
    start, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        main(args)
    return time.perf_counter() - start, time.process_time() - cpu


def services(count: int) -> str:
    return "services:\n" + "".join(
        f"  svc{i}:\n    image: pytorch/pytorch   # the image\n    shm_size: '64m'   # too small\n"
        f"    environment:\n      RANK: '{i}'\n"
        for i in range(count)
    )


def pods(count: int) -> str:
    """A manifest of `count` failing pods, one document each: --fix adds a volume and its mount to each."""
    return "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}  # the pod\nspec:\n  containers:\n  - name: c\n"
        "    image: pytorch/pytorch\n    resources:\n      limits:\n        memory: 4Gi\n"
        for i in range(count)
    )


def fixing(
    count: int, make=services, what: str = "compose", unit: str = "services", repeats: int = 5
) -> tuple[float, float]:
    """Plain lint, --diff and --fix of one file of `count` failing targets, interleaved (lint, --diff, --fix, again),
    the best of `repeats` of each; --fix on a fresh copy each time. Returns --fix's best (wall, CPU) seconds."""
    loader = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
    runs: dict[str, list[tuple[float, float]]] = {"lint": [], "--diff": [], "--fix": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{what}.yml"
        text = make(count)
        for _ in range(repeats):
            for label, extra in (("lint", []), ("--diff", ["--diff"]), ("--fix", ["--fix"])):
                path.write_text(text)
                with contextlib.redirect_stderr(io.StringIO()):
                    runs[label].append(clocked(["lint", str(path), *loader, *extra]))
    wall = {label: min(w for w, _ in done) for label, done in runs.items()}
    cpu = {label: min(c for _, c in done) for label, done in runs.items()}
    print(
        f"{what}, {count:>5} {unit}  lint {wall['lint']:6.2f} s  --diff {wall['--diff']:6.2f} s "
        f"({wall['--diff'] / wall['lint']:4.1f}x)  --fix {wall['--fix']:6.2f} s ({wall['--fix'] / wall['lint']:4.1f}x)"
        f"  CPU: lint {cpu['lint']:6.2f} s  --fix {cpu['--fix']:6.2f} s ({cpu['--fix'] / cpu['lint']:4.1f}x)"
    )
    return wall["--fix"], cpu["--fix"]


def growth(what: str, small: tuple[float, float], large: tuple[float, float]) -> None:
    print(f"--fix of 10x the {what}: {large[0] / small[0]:.1f}x the time ({large[1] / small[1]:.1f}x the CPU time)")


def run(pods: int) -> None:
    sample = json.loads((DATA / "kubectl-get-pods.json").read_text())["items"]
    items = [
        dict(sample[i % len(sample)], metadata={**sample[i % len(sample)]["metadata"], "name": f"pod-{i}"})
        for i in range(pods)
    ]
    manifest = (DATA / "k8s" / "training.yaml").read_text()
    loader = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB", "--format", "json"]
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "pods.json"
        dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        many = Path(tmp) / "chart.yaml"
        copies = max(1, pods // 8)  # 8 workloads per copy of the manifest
        many.write_text("\n---\n".join([manifest] * copies))
        for label, path, targets in (
            ("kubectl get pods -o json", dump, pods),
            ("multi-document YAML", many, copies * 8),
        ):
            size = path.stat().st_size / 2**20
            seconds = min(timed(["lint", str(path), *loader]) for _ in range(3))
            print(
                f"{label:<26} {targets:>6} targets  {size:6.1f} MiB  {seconds:6.2f} s  "
                f"{targets / seconds:8.0f} targets/s"
            )


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    growth("services", fixing(count), fixing(10 * count))
    growth("pods", fixing(count, pods, "kubernetes", "pods"), fixing(10 * count, pods, "kubernetes", "pods"))
