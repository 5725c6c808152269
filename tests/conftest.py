"""Shared test plumbing: the markers each folder implies, and fixtures for the real engine, test images and torch.

A test in tests/integration/<kind>/ is marked <kind> (docker, torch, podman, prometheus, ci, process) without being
told, and every kind but torch is marked docker too: docker is the integration lane's marker, what the machine
scripts/test.sh prepares (the fast lane, -m "not docker and not torch", leaves it out). A test marked with a need
skips when the need is missing, and fails under CI=true: the suite's real work is the point.
Tests in tests/unit/ need neither an engine nor torch. Plain helpers: tests/helpers.py.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import BUSYBOX, CI, PYTHON, REPO, ci_tool, kill_started, missing, unique_name

# Hypothesis: no deadline (a case's time on a shared machine is no verdict; the hostile-input bounds catch hangs).
# Under CI the examples are derandomized, so that a failure there is reproduced here with HYPOTHESIS_PROFILE=ci.
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", settings.get_profile("dev"), derandomize=True, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if CI else "dev"))

INTEGRATION = Path(__file__).resolve().parent / "integration"
UNIT = Path(__file__).resolve().parent / "unit"
NEEDS_TOOLS = {"engine", "images", "torch_module"}
# Folders of the integration lane beside docker's, marked docker too. Podman's and the exporter's need an engine beside
# their own tool (Podman's Docker API; the exporter reads the Docker engine's containers, and its examples run under
# docker-compose). The CI integrations' need no engine, but a CI machine's tools and a real install from the package
# index (a minute): not the fast lane's, and their docker marker asks for no engine. Nor does process/'s: a process of
# its own for each case (the bad-input catalogue's rows, run's child under signals), its waits and bounds.
ENGINE_KINDS = {"podman", "prometheus"}
LANE_ONLY = {"ci", "process"}
SHMDOCTOR_IMAGE = f"shmdoctor-test/shmdoctor:{unique_name('dev')}"  # this run's build of the Dockerfile, removed after


@functools.cache
def _engine_up() -> bool:
    """The engine answers (`docker version` asks the server only its version; `docker info` can stall for minutes
    while the engine is busy with hundreds of containers)."""
    if shutil.which("docker") is None:
        return False
    try:
        probe = ["docker", "version", "--format", "{{.Server.Version}}"]
        return subprocess.run(probe, capture_output=True, timeout=60).returncode == 0
    except subprocess.TimeoutExpired:
        return False


# marker -> (is it there, what to say when it is not)
NEEDS = {
    "docker": (_engine_up, "no Docker engine is running"),  # in tests/integration/ci, process: the lane (LANE_ONLY)
    "torch": (lambda: importlib.util.find_spec("torch") is not None, "torch is not installed"),
    "podman": (lambda: shutil.which("podman") is not None, "podman is not installed"),
    "prometheus": (lambda: shutil.which("prometheus") is not None, "prometheus is not installed"),
    "ci": (
        lambda: shutil.which("git") is not None and all(map(ci_tool, ("pre-commit", "actionlint", "shellcheck"))),
        "git, pre-commit, actionlint or shellcheck is not installed (all but git: the test extra)",
    ),
    "process": (lambda: True, ""),  # Python alone
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path, kind = Path(item.fspath), _kind(item)
        if kind is not None:
            if kind not in NEEDS:
                raise pytest.UsageError(f"{path}: tests/integration/{kind}/ is not one of {sorted(NEEDS)}")
            item.add_marker(kind)
            if kind in ENGINE_KINDS | LANE_ONLY:  # the integration lane: -m "not docker and not torch" leaves them out
                item.add_marker("docker")
        elif path.is_relative_to(UNIT):
            needs = {m.name for m in item.iter_markers() if m.name in NEEDS} | (NEEDS_TOOLS & set(item.fixturenames))
            if needs:
                raise pytest.UsageError(f"{item.nodeid} needs {sorted(needs)}: it belongs in tests/integration/")


def _kind(item) -> str | None:
    path = Path(item.fspath)
    return path.relative_to(INTEGRATION).parts[0] if path.is_relative_to(INTEGRATION) else None


def pytest_runtest_setup(item):
    lane_only = _kind(item) in LANE_ONLY
    for marker in item.iter_markers():
        if marker.name in NEEDS and not (lane_only and marker.name == "docker"):
            present, says = NEEDS[marker.name]
            if not present():
                missing(says)


@pytest.fixture(autouse=True)
def _no_cli_left_running():
    yield
    kill_started()


@pytest.fixture(scope="session")
def engine() -> None:
    if not _engine_up():
        missing("no Docker engine is running")


@pytest.fixture(scope="session")
def images(engine) -> None:
    for image in (BUSYBOX, PYTHON):
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
            missing(f"test image {image} is missing (scripts/build-test-images.sh builds it)")


@pytest.fixture(scope="session")
def torch_module():
    try:
        import torch
    except ImportError:
        missing("torch is not installed")
    return torch


@pytest.fixture(scope="session")
def image(images):
    """The Dockerfile built (test_image.py, the exporter's compose service) on the Debian test image (no registry
    here for python:3.12-slim), tagged for this run alone and removed after it: test runs leave no trail of images,
    and two runs never test each other's build."""
    proc = subprocess.run(
        [
            "docker",
            "build",
            "-q",
            "--network",
            "host",
            "--build-arg",
            "BASE_IMAGE=shmdoctor-test/debian:bookworm",
            "-t",
            SHMDOCTOR_IMAGE,
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    try:
        assert proc.returncode == 0, proc.stderr
        yield SHMDOCTOR_IMAGE
    finally:
        subprocess.run(["docker", "rmi", SHMDOCTOR_IMAGE], capture_output=True, timeout=120)
