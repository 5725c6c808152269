"""The top-level Dockerfile, built and run for real: the image checks, audits, and stops what cannot fit."""

import json
import subprocess
from pathlib import Path

from tests.helpers import BUSYBOX, docker_run, unique_name, validate

SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
# The image has no shmdoctor script of its own: examples/entrypoint.sh finds one on PATH.
SHIM = (
    'mkdir -p /tmp/bin && printf "#!/bin/sh\\nexec python -m shmdoctor \\"\\$@\\"\\n" >/tmp/bin/shmdoctor'
    " && chmod +x /tmp/bin/shmdoctor && PATH=/tmp/bin:$PATH "
)


def test_image_check_in_a_64_mib_container_fails_with_the_fix(image):
    proc = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, "check", *SEED],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and proc.stdout.startswith("FAIL")
    assert "docker run --shm-size=1536m" in proc.stdout


def test_image_is_small_runs_as_non_root_and_has_no_torch(image):
    user = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "id", image, "-u"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert user == "10001"
    no_torch = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            "python3",
            image,
            "-c",
            "import importlib.util as u; print(u.find_spec('torch'))",
        ],
        capture_output=True,
        text=True,
    )
    assert no_torch.stdout.strip() == "None"


def test_entrypoint_stops_a_container_too_small_for_its_loader():
    train = "sh examples/entrypoint.sh python examples/train.py --batches 4 --no-preflight"
    stopped = docker_run(cmd=["sh", "-c", SHIM + train])
    assert stopped.returncode == 1 and stopped.stdout.startswith("FAIL")
    assert "trained" not in stopped.stdout and "--shm-size=1536m" in stopped.stdout


def test_entrypoint_execs_training_when_it_fits():
    proc = docker_run(
        "--shm-size=1536m", cmd=["sh", "-c", SHIM + "sh examples/entrypoint.sh python examples/train.py --batches 4"]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK") and proc.stdout.rstrip().endswith("trained on 4 batches")


def test_image_audits_a_running_container_through_the_read_only_socket(image):
    name = unique_name("image-audited")
    subprocess.run(
        ["docker", "run", "-d", "--name", name, "--network", "none", BUSYBOX, "sleep", "600"],
        check=True,
        capture_output=True,
    )
    try:
        gid = str(Path("/var/run/docker.sock").stat().st_gid)
        proc = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                "-v",
                "/var/run/docker.sock:/var/run/docker.sock:ro",
                "--group-add",
                gid,
                image,
                "audit",
                name,
                *SEED,
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        doc = validate(json.loads(proc.stdout))
        assert proc.returncode == 1 and doc["verdict"] == "fail", proc.stderr
        [report] = doc["reports"]
        assert report["target"]["name"] == name and report["shm"]["size_bytes"] == 64 * 2**20
        assert "--shm-size=1536m" in report["findings"][0]["fixes"][0]["docker_args"]
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
