"""Ray's object store, for real: Ray 2.60 (CPU) in containers with Docker's default /dev/shm and with the size
shmdoctor asks for. shmdoctor predicts Ray's fallback to /tmp before ray.init(); Ray then does (or does not) fall
back, in its own words."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers import REPO, missing, unique_name, validate

RAY = "shmdoctor-test/ray:1"  # scripts/build-test-images.sh: the python image with ray==2.60.0
FALLBACK = "The object store is using /tmp"
# check first (what shmdoctor predicts), then Ray itself starts, and says where its store went.
SCRIPT = (
    "python -m shmdoctor check --ray-object-store auto --format json > /tmp/check.json; "
    "python -c 'import ray; ray.init(num_cpus=1, include_dashboard=False); ray.shutdown()' 2>&1; "
    "echo '--- check'; cat /tmp/check.json"
)


@pytest.fixture(scope="module")
def ray_image(engine):
    if subprocess.run(["docker", "image", "inspect", RAY], capture_output=True).returncode:
        missing(f"test image {RAY} is missing (scripts/build-test-images.sh builds it)")


def run_ray(*docker_args: str) -> tuple[dict, str]:
    name = unique_name("ray")
    argv = ["docker", "run", "--rm", "--name", name, "--network", "none", "-v", f"{REPO}:/src:ro", "-w", "/src"]
    proc = subprocess.run([*argv, *docker_args, RAY, "sh", "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    ray_log, _, check = proc.stdout.partition("--- check\n")
    assert check.strip(), proc.stdout + proc.stderr
    return validate(json.loads(check)), ray_log


def test_ray_falls_back_to_tmp_in_the_default_shm_as_predicted(ray_image):
    doc, ray_log = run_ray("--shm-size=64m", "--memory=4g")
    ids = [f["id"] for f in doc["findings"]]
    assert "ray-object-store-fallback" in ids, doc["findings"]
    ray = next(t for t in doc["requirement"]["breakdown"] if t["term"] == "ray")
    assert ray["bytes"] > 1_000_000_000  # 30% of the ~4 GiB the container has
    assert FALLBACK in ray_log, ray_log  # and Ray says so itself
    fix = next(f for f in doc["findings"] if f["id"] == "ray-object-store-fallback")["fixes"][0]
    size = next(a for a in fix["docker_args"] if a.startswith("--shm-size="))

    roomy, ray_log = run_ray(size, "--memory=4g")  # the size shmdoctor asked for
    assert "ray-object-store-fallback" not in [f["id"] for f in roomy["findings"]], roomy["findings"]
    assert FALLBACK not in ray_log, ray_log
