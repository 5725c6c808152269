"""What lint computes for a compose service is what the engine gives, with a real compose (Debian's docker-compose
1.29) running the file, not a mapping of its keys written here: busybox `df` reads each service's /dev/shm; and
the fix lint prints, applied to the file, makes the seed loader train (tests/compose_loop.py)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from shmdoctor.cli import main
from tests import compose_loop
from tests.helpers import BUSYBOX, DATA, PYTHON, REPO, unique_name, validate

COMPOSE = DATA / "manifests" / "docker-compose.yml"


def df_shm_bytes(*args: str) -> int:
    proc = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", *args, BUSYBOX, "df", "-Pk", "/dev/shm"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.splitlines()[1].split()[1]) * 1024


def test_lint_sizes_match_the_engine(images, tmp_path, capsys):
    """The real-world file run by docker-compose 1.29 itself (busybox for each image, nothing but /dev/shm's keys
    changed): every size lint says is what `df` reads in the service's container."""
    assert main(["lint", str(COMPOSE), "--format", "json"]) == 0
    reports = {r["target"]["name"].split(":")[-1]: r for r in validate(json.loads(capsys.readouterr().out))["reports"]}
    sized = {name for name, r in reports.items() if r["shm"]["size_bytes"] is not None}
    assert sized == {"trainer", "evaluator", "preprocess", "augment", "feature-store", "feature-reader",
                     "feature-follower", "bigshm-smallmem"}  # fmt: skip
    owner = unique_name("feature-store")  # container names are the engine's: one per run
    services = {}
    for name, service in yaml.safe_load(COMPOSE.read_text())["services"].items():
        if name not in sized:  # the host's /dev/shm, or an IPC owner outside the file: lint says it cannot know
            continue
        kept = {k: v for k, v in service.items() if k in ("shm_size", "ipc", "tmpfs", "mem_limit", "container_name")}
        if kept.get("container_name"):
            kept["container_name"] = owner
        if kept.get("ipc") == "container:feature-store":
            kept["ipc"] = f"container:{owner}"
        services[name] = {**kept, "image": BUSYBOX, "command": ["sleep", "300"], "network_mode": "none"}
    # compose 1.29 checks that a container:NAME owner exists when it reads the file: the file without its joiners
    # comes up first, then the whole file, in the same project
    joiners = [n for n, svc in services.items() if str(svc.get("ipc", "")).startswith("container:")]
    first, path = tmp_path / "owners.yml", tmp_path / "docker-compose.yml"
    first.write_text(yaml.safe_dump({"services": {n: svc for n, svc in services.items() if n not in joiners}}))
    path.write_text(yaml.safe_dump({"services": services}))
    project = ["-p", unique_name("sizes").replace("-", "")]
    compose = ["docker-compose", "-f", str(path), *project]
    try:
        for argv in (["docker-compose", "-f", str(first), *project], compose):
            up = subprocess.run([*argv, "up", "-d"], capture_output=True, text=True, timeout=300)
            assert up.returncode == 0, up.stderr[-800:]
        for name in services:
            df = subprocess.run([*compose, "exec", "-T", name, "df", "-Pk", "/dev/shm"], capture_output=True,
                                text=True, timeout=60)  # fmt: skip
            assert df.returncode == 0, (name, df.stderr)
            assert int(df.stdout.splitlines()[1].split()[1]) * 1024 == reports[name]["shm"]["size_bytes"], name
    finally:
        subprocess.run([*compose, "down", "-t", "0"], capture_output=True, timeout=300)


def test_swarm_tmpfs_workaround_matches_the_engine(images, capsys):
    """stack.yml: Swarm turns a `type: tmpfs` volume into a tmpfs mount (what --mount does); shm_size it drops."""
    stack = COMPOSE.parent / "stack.yml"
    main(["lint", str(stack), "--format", "json"])
    reports = {r["target"]["name"].split(":")[-1]: r for r in validate(json.loads(capsys.readouterr().out))["reports"]}
    volume = yaml.safe_load(stack.read_text())["services"]["evaluator"]["volumes"][0]
    mount = f"type=tmpfs,destination={volume['target']},tmpfs-size={volume['tmpfs']['size']}"
    assert df_shm_bytes("--mount", mount) == reports["evaluator"]["shm"]["size_bytes"]
    assert df_shm_bytes() == reports["trainer"]["shm"]["size_bytes"]  # shm_size: 2g, ignored: the engine's default


@pytest.mark.parametrize("written, finding, failure", compose_loop.CASES)
def test_the_compose_fix_lint_prints_makes_the_loader_train_under_docker_compose(
    images, tmp_path, written, finding, failure
):
    """lint's closed loop under Debian's docker-compose 1.29 on the Docker engine (tests/compose_loop.py)."""
    compose_loop.closed_loop(
        {"image": PYTHON, "volumes": [f"{REPO}:/src:ro"]}, None, tmp_path, written, finding, failure
    )


def test_lint_fix_makes_the_loader_that_died_in_64_mib_train_under_docker_compose(images, tmp_path):
    """The same loop, the file fixed by `lint --fix`: the trainer dies in the engine's 64 MiB, then trains."""
    base = {"image": PYTHON, "volumes": [f"{REPO}:/src:ro"]}
    compose_loop.closed_loop(base, None, tmp_path, *compose_loop.CASES[0], by_fix=True)
