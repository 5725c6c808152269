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
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        main(args)
    return time.perf_counter() - start


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


def fixing(count: int, make=services, what: str = "compose", unit: str = "services") -> float:
    """Plain lint, --diff and --fix of one file of `count` failing targets; --fix on a fresh copy each time."""
    loader = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{what}.yml"
        text = make(count)
        for label, extra in (("lint", []), ("--diff", ["--diff"]), ("--fix", ["--fix"])):
            runs = []
            for _ in range(3):
                path.write_text(text)
                with contextlib.redirect_stderr(io.StringIO()):
                    runs.append(timed(["lint", str(path), *loader, *extra]))
            times[label] = min(runs)
    ratios = {label: times[label] / times["lint"] for label in times}
    print(
        f"{what}, {count:>5} {unit}  lint {times['lint']:6.2f} s  --diff {times['--diff']:6.2f} s "
        f"({ratios['--diff']:4.1f}x)  --fix {times['--fix']:6.2f} s ({ratios['--fix']:4.1f}x)"
    )
    return times["--fix"]


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
    small, large = fixing(count), fixing(10 * count)
    print(f"--fix of 10x the services: {large / small:.1f}x the time")
    small, large = fixing(count, pods, "kubernetes", "pods"), fixing(10 * count, pods, "kubernetes", "pods")
    print(f"--fix of 10x the pods: {large / small:.1f}x the time")
