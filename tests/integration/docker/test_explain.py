"""explain where the job ran: the same bus-error text (the error line quoted in XPixelGroup/BasicSR#59, under a
traceback of its shape) is /dev/shm in Docker's 64 MiB and not shared memory with a big one, judged on the facts of
a real container."""

import json

import pytest

from tests.helpers import docker_run, validate

pytestmark = pytest.mark.usefixtures("images")
BASICSR = "tests/data/explain/basicsr-59.log"


def explain_in(*docker_args: str) -> tuple[int, dict]:
    proc = docker_run(*docker_args, cmd=["python", "-m", "shmdoctor", "explain", BASICSR, "--format", "json"])
    return proc.returncode, validate(json.loads(proc.stdout))


def test_a_bus_error_in_64_mib_is_shm_space():
    code, doc = explain_in()
    assert code == 1 and [d["cause"] for d in doc["diagnoses"]] == ["shm-space"]
    assert doc["shm"]["size_bytes"] == 64 * 2**20


def test_the_same_bus_error_with_a_big_shm_is_not_shared_memory():
    code, doc = explain_in("--shm-size=32g")
    assert code == 0 and [d["cause"] for d in doc["diagnoses"]] == ["not-shm"]
    assert "32 GiB free" in doc["findings"][0]["message"]
