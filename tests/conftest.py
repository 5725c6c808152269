"""Shared test plumbing: the real Docker engine and the images scripts/build-test-images.sh builds.

Under CI=true a missing engine, image or torch is a failure, never a skip: the suite's real work is the point.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUSYBOX = "shmdoctor-test/busybox:1"
PYTHON = "shmdoctor-test/python:1"  # Debian python3 + torch 2.13 CPU + click/psutil/pyyaml; the source at /src
CI = os.environ.get("CI", "").lower() == "true"


def missing(what: str) -> None:
    """Fail under CI, skip elsewhere: the one place that decides."""
    if CI:
        pytest.fail(f"{what} (under CI=true this is a failure: run scripts/test.sh)", pytrace=False)
    pytest.skip(what)


def _engine_up() -> bool:
    return (
        shutil.which("docker") is not None
        and subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    )


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


def docker_run(*args: str, cmd: list[str], image: str = PYTHON, timeout: int = 600) -> subprocess.CompletedProcess:
    """`docker run --rm` with the source tree mounted read-only at /src, no network; returns the finished process."""
    argv = ["docker", "run", "--rm", "--network", "none", "-v", f"{REPO}:/src:ro", "-w", "/src", *args, image, *cmd]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def shmdoctor_in(*docker_args: str, args: list[str]) -> tuple[int, dict]:
    """Run `python -m shmdoctor ARGS --format json` inside a fresh container; (exit code, parsed report)."""
    proc = docker_run(*docker_args, cmd=["python", "-m", "shmdoctor", *args, "--format", "json"])
    assert proc.stdout.strip(), f"no output; stderr: {proc.stderr}"
    return proc.returncode, json.loads(proc.stdout)


def run_cli(*args: str, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """The installed CLI as a user runs it, in a subprocess, on this machine."""
    return subprocess.run(
        [sys.executable, "-m", "shmdoctor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )
