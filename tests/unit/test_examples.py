"""examples/ pass lint with the loader their own label declares, and fail it for a loader they cannot hold."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO, entry_point, validate


@pytest.mark.parametrize("example", ["examples/docker-compose.yml", "examples/k8s-job.yaml"])
def test_example_definitions_pass_lint_with_their_own_loader(example):
    proc = subprocess.run(
        [entry_point(), "lint", example, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    doc = validate(json.loads(proc.stdout))
    assert proc.returncode == 0 and doc["verdict"] == "ok", proc.stdout
    [report] = doc["reports"]
    assert report["requirement"]["bytes"] == 900 * 2**20  # from the label/annotation: batch 100 × 1 MiB, 4 workers
    assert report["shm"]["size_bytes"] == 1536 * 2**20


@pytest.mark.parametrize("example", ["examples/docker-compose.yml", "examples/k8s-job.yaml"])
def test_example_definitions_fail_lint_for_a_loader_they_cannot_hold(example, tmp_path):
    bigger = tmp_path / Path(example).name  # the same file, with a loader twice as hungry in its label
    bigger.write_text((REPO / example).read_text().replace("num_workers=4", "num_workers=8"))
    proc = subprocess.run(
        [entry_point(), "lint", str(bigger), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = validate(json.loads(proc.stdout))
    assert proc.returncode == 1 and doc["reports"][0]["findings"][0]["id"] == "shm-too-small"
