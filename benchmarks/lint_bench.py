"""How fast lint reads a large cluster dump and a large multi-document manifest: prints figures, asserts nothing.

.venv/bin/python benchmarks/lint_bench.py [PODS]
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
