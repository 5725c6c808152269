"""lint's closed loop under a real compose (Debian's docker-compose 1.29) on a real engine, for any engine: a compose
file whose trainer runs the seed loader fails for real, lint's compose fix is applied to the file as printed, lint
passes it, and the trainer trains. Shared by the Docker and the Podman integration tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.helpers import WAIT, missing, run_cli, unique_name

TRAIN = ["python3", "examples/train.py", "--batches", "12", "--step", "0.1", "--no-preflight"]
SEED_LABEL = {"shmdoctor.loader": "batch_size=100,num_workers=4,sample_bytes=1MiB"}  # 900 MiB
# (keys the file is written with, the finding lint must say first, what the real run prints)
CASES = [
    ({}, "shm-too-small", "unable to allocate shared memory"),  # the engine's default /dev/shm
    ({"tmpfs": ["/dev/shm:ro,size=2g"]}, "shm-read-only", "Read-only file system"),  # big enough, read-only
]


def _write(path: Path, service: dict) -> None:
    path.write_text(yaml.safe_dump({"services": {"trainer": service}}))


def _up(path: Path, docker_host: str | None) -> subprocess.CompletedProcess:
    """`docker-compose up` until the trainer exits, then `down`."""
    project = unique_name("compose").replace("-", "")
    env = {**os.environ, **({"DOCKER_HOST": docker_host} if docker_host else {})}
    argv = ["docker-compose", "-f", str(path), "-p", project]
    try:
        return subprocess.run([*argv, "up", "--exit-code-from", "trainer"], capture_output=True, text=True,
                              timeout=600, env=env)  # fmt: skip
    finally:
        subprocess.run([*argv, "down"], capture_output=True, timeout=WAIT * 4, env=env)


def closed_loop(
    base: dict, docker_host: str | None, tmp_path: Path, written: dict, finding: str, failure: str, by_fix: bool = False
) -> None:
    """`base`: the trainer service for this engine (image, volumes, ...) without its /dev/shm keys. by_fix: the file
    is fixed by `lint --fix` itself, not by the printed snippet."""
    if shutil.which("docker-compose") is None:
        missing("docker-compose is not installed (scripts/test.sh installs it)")
    compose = tmp_path / "docker-compose.yml"
    service = {"command": TRAIN, "working_dir": "/src", "network_mode": "none", "labels": SEED_LABEL, **base}
    _write(compose, {**service, **written})
    before = json.loads(run_cli("lint", str(compose), "--format", "json").stdout)["reports"][0]
    assert before["verdict"] == "fail" and before["findings"][0]["id"] == finding, before["findings"]
    fix = before["findings"][0]["fixes"][0]["compose"]
    failed = _up(compose, docker_host)
    assert failed.returncode != 0 and failure in failed.stdout + failed.stderr, failed.stdout[-800:]

    if by_fix:
        before_fix = compose.read_text()
        fixed = run_cli("lint", str(compose), "--fix")
        assert fixed.returncode == 1 and "fixed " in fixed.stderr, fixed.stderr  # 1: a file changed
        added = set(compose.read_text().splitlines()) - set(before_fix.splitlines())
        assert [line.split(":")[0].strip() for line in added] == ["shm_size"], added  # only what the fix needs
    else:
        _write(compose, {**service, **written, **yaml.safe_load(fix)})  # the snippet, as printed, into the service
    after = run_cli("lint", str(compose), "--format", "json")
    assert after.returncode == 0 and json.loads(after.stdout)["reports"][0]["verdict"] == "ok", after.stdout[-800:]
    trained = _up(compose, docker_host)
    assert trained.returncode == 0 and "trained on 12 batches" in trained.stdout, trained.stdout[-800:]
