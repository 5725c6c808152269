"""Podman, for real (Debian's podman 4.3): check inside a Podman container knows it is Podman (its 64000k default,
fixes said as `podman run`), the fix it prints makes the seed loader train, and audit reads Podman's containers
through its Docker API (`podman system service` on a socket of this test's own), and the compose fix lint prints,
applied to the file, makes the seed loader train under Debian's docker-compose 1.29 on that engine
(tests/compose_loop.py; the Docker engine runs the same loop in tests/integration/docker/test_lint.py).

Images come from scripts/build-test-images.sh (imported root filesystems: no registry here). runc needs ulimits
within this machine's hard limits (FACTS.md): every `podman run` here passes them.
"""

from __future__ import annotations

import json
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import compose_loop
from tests.helpers import REPO, WAIT, missing, run_cli, unique_name
from tests.unit.probe.test_quadlet import AT_SHM

BUSYBOX = "localhost/shmdoctor-test/busybox:1"
DEBIAN = "localhost/shmdoctor-test/debian:bookworm"  # python3.11, as this venv: its site-packages are mounted
SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB
TRAIN = ["python3", "examples/train.py", "--batches", "12", "--step", "0.1", "--no-preflight"]


def _ulimits() -> list[str]:
    """--ulimit for nofile and nproc within this machine's hard limits (runc: 'error setting rlimit type 7')."""
    out = []
    for name, limit in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        hard = resource.getrlimit(limit)[1]
        value = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
        out += ["--ulimit", f"{name}={value}:{value}"]
    return out


def podman(*args: str, timeout: int = WAIT * 4) -> subprocess.CompletedProcess:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)


def podman_run(*options: str, cmd: list[str], image: str = DEBIAN) -> subprocess.CompletedProcess:
    """`podman run --rm` of the source tree (read-only at /src) with this venv's packages, no network."""
    return podman(
        "run", "--rm", "--network", "none", *_ulimits(), "-v", f"{REPO}:/src:ro", "-v", f"{SITE}:/deps:ro",
        "-e", "PYTHONPATH=/src:/deps", "-w", "/src", *options, image, *cmd, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def podman_images():
    for image in (BUSYBOX, DEBIAN):
        if podman("image", "exists", image).returncode:
            missing(f"podman image {image} is missing (scripts/build-test-images.sh imports it)")


def test_check_inside_podman_knows_podman_and_its_fix_makes_the_loader_train(podman_images):
    proc = podman_run(cmd=["python3", "-m", "shmdoctor", "check", *SEED, "--format", "json"])
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["runtime"] == "podman"
    assert (report["shm"]["source"], report["shm"]["size_bytes"]) == ("podman-shm", 64000 * 1024)
    [grow, *_] = next(f for f in report["findings"] if f["id"] == "shm-too-small")["fixes"]
    assert grow["docker_args"] == ["--shm-size=1536m"]
    assert grow["command"] == "podman run --shm-size=1536m ..."  # the engine named: what a JSON consumer runs

    text = podman_run(cmd=["python3", "-m", "shmdoctor", "check", *SEED]).stdout
    assert "podman run --shm-size=1536m ..." in text and "docker run" not in text
    assert "Podman's shm mount (--shm-size, 62.5 MiB by default)" in text

    failed = podman_run(cmd=TRAIN)  # the seed loader, for real, in Podman's default /dev/shm
    assert failed.returncode != 0 and "unable to allocate shared memory" in failed.stdout + failed.stderr
    flags = shlex.split(grow["command"])[2:-1]  # podman run FLAGS ...: the flags of the command check wrote
    trained = podman_run(*flags, cmd=TRAIN)  # with what check said
    assert trained.returncode == 0 and "trained on 12 batches" in trained.stdout, trained.stderr[-500:]


def test_without_a_loader_podmans_default_is_named_as_podmans(podman_images):
    proc = podman_run(cmd=["python3", "-m", "shmdoctor", "check", "--format", "json"])
    report = json.loads(proc.stdout)
    [finding] = report["findings"]
    assert finding["id"] == "default-shm" and "Podman's default 62.5 MiB" in finding["message"]


@pytest.fixture
def podman_service(podman_images, tmp_path):
    """`podman system service` serving Docker's API on a socket of this test's own; stopped after."""
    socket = tmp_path / "podman.sock"
    service = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{socket}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + WAIT
        while not socket.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert socket.exists(), "podman system service did not open its socket"
        yield f"unix://{socket}"
    finally:
        service.terminate()
        service.wait(timeout=WAIT)


def test_audit_through_podmans_docker_api(podman_service):
    fleet = {"default": [], "big": ["--shm-size=2g"], "ro": ["--tmpfs", "/dev/shm:ro,size=2g"]}
    names = {label: unique_name(f"podman-{label}") for label in fleet}
    try:
        for label, options in fleet.items():
            run = podman("run", "-d", "--network", "none", *_ulimits(), "--name", names[label], *options,
                         BUSYBOX, "sleep", "600")  # fmt: skip
            assert run.returncode == 0, run.stderr
        env = {"DOCKER_HOST": podman_service}
        proc = run_cli("audit", *names.values(), *SEED, "--format", "json", env=env)
        doc = json.loads(proc.stdout)
        text = run_cli("audit", *names.values(), *SEED, env=env).stdout
    finally:
        podman("rm", "--force", "--ignore", "--time", "0", *names.values())
    reports = {r["target"]["name"]: r for r in doc["reports"]}
    default, big, ro = (reports[names[label]] for label in fleet)
    assert {r["runtime"] for r in reports.values()} == {"podman"}
    assert (default["shm"]["source"], default["shm"]["size_bytes"]) == ("podman-shm", 64000 * 1024)
    assert default["ipc"]["mode"] == "shareable"  # Podman's inspect says so by default
    assert default["verdict"] == "fail" and big["verdict"] == "ok" and big["shm"]["size_bytes"] == 2 * 1024**3
    assert ro["shm"]["read_only"] and ro["findings"][0]["id"] == "shm-read-only"  # never a false OK
    assert proc.returncode == 1 and f"3 container(s) on {podman_service}" in text and "--shm-size=1536m" in text


def test_check_in_a_sagemaker_job_gives_the_loader_that_fits_and_it_trains(podman_images):
    """SageMaker sets SM_CURRENT_HOST and friends (their names are read, never their values) and has no /dev/shm
    setting: check says so, and the loader settings it offers train in the /dev/shm there is."""
    env = ["-e", "SM_CURRENT_HOST=algo-1"]
    proc = podman_run(*env, cmd=["python3", "-m", "shmdoctor", "check", *SEED, "--format", "json"])
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["runtime"] == "sagemaker"
    [move, *fits] = next(f for f in report["findings"] if f["id"] == "shm-too-small")["fixes"]
    assert move["summary"].startswith("SageMaker jobs cannot size /dev/shm") and not move["docker_args"]
    assert [list(f["loader"]) for f in fits] == [["batch_size"]]  # one knob at a time: what fits 62.5 MiB
    flags = {"batch_size": "--batch-size", "num_workers": "--workers", "prefetch_factor": "--prefetch-factor"}
    for fix in fits:
        args = [a for k, v in fix["loader"].items() for a in (flags[k], str(v))]
        trained = podman_run(*env, cmd=[*TRAIN, *args])
        assert trained.returncode == 0 and "trained on 12 batches" in trained.stdout, (fix, trained.stderr[-500:])


def _compose_base() -> dict:
    ulimits = {name: int(value.split(":")[0]) for name, value in (u.split("=") for u in _ulimits()[1::2])}
    return {
        "image": DEBIAN,
        "environment": {"PYTHONPATH": "/src:/deps"},
        "volumes": [f"{REPO}:/src:ro", f"{SITE}:/deps:ro"],
        "ulimits": ulimits,
    }


@pytest.mark.parametrize("written, finding, failure", compose_loop.CASES)
def test_the_compose_fix_lint_prints_makes_the_loader_train_under_docker_compose(
    podman_service, tmp_path, written, finding, failure
):
    """lint's closed loop under Debian's docker-compose 1.29, on Podman's engine through its Docker API."""
    compose_loop.closed_loop(_compose_base(), podman_service, tmp_path, written, finding, failure)


def test_lint_fix_makes_the_loader_that_died_in_its_default_shm_train_under_docker_compose(podman_service, tmp_path):
    """The same loop on Podman's Docker API, the file fixed by `lint --fix`."""
    compose_loop.closed_loop(_compose_base(), podman_service, tmp_path, *compose_loop.CASES[0], by_fix=True)


def _flags(lines: str) -> list[str]:
    """A unit's mount keys as the `podman run` flags Quadlet writes for them."""
    flag = {"Tmpfs": ["--tmpfs"], "Volume": ["-v"], "Mount": ["--mount"]}
    out = []
    for line in lines.splitlines():
        key, _, value = line.partition("=")
        out += shlex.split(value) if key == "PodmanArgs" else [*flag[key], value]
    return out


@pytest.mark.parametrize("lines, shm", AT_SHM)
def test_mounts_at_dev_shm_lint_refuses_are_those_podman_refuses(podman_images, lines, shm):
    """Each unit of the unit tests' table as `podman run` flags: refused by Podman where lint refuses it, else run,
    with the /dev/shm size lint reads (df's 1K blocks) where it reads one."""
    proc = podman("run", "--rm", "--network", "none", *_ulimits(), *_flags(lines), BUSYBOX, "df", "-k", "/dev/shm")
    if shm is None:
        assert proc.returncode != 0 and "duplicate mount destination" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    size = shm[0]
    if size is not None:
        assert int(proc.stdout.splitlines()[-1].split()[1]) * 1024 == size, proc.stdout
