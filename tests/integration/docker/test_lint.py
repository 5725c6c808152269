"""What lint computes for a compose service is what the engine gives: each service of the real-world compose file is
started with the `docker run` flags compose maps its keys to, and busybox `df` reads its /dev/shm."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from shmdoctor.cli import main
from tests import compose_loop
from tests.helpers import BUSYBOX, DATA, PYTHON, REPO, unique_name, validate

COMPOSE = DATA / "manifests" / "docker-compose.yml"


def docker_args(service: dict, names: dict[str, str]) -> list[str]:
    """compose keys -> docker run flags, as compose maps them (shm_size, ipc, tmpfs, mem_limit)."""
    args = []
    if "shm_size" in service:
        args.append(f"--shm-size={service['shm_size']}")
    ipc = service.get("ipc")
    if ipc:
        mode, _, owner = ipc.partition(":")
        args.append(f"--ipc=container:{names[owner]}" if mode in ("service", "container") else f"--ipc={ipc}")
    tmpfs = service.get("tmpfs") or []
    for entry in [tmpfs] if isinstance(tmpfs, str) else tmpfs:
        args += ["--tmpfs", entry]
    if "mem_limit" in service:
        args.append(f"--memory={service['mem_limit']}")
    return args


def df_shm_bytes(*args: str) -> int:
    proc = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", *args, BUSYBOX, "df", "-Pk", "/dev/shm"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.splitlines()[1].split()[1]) * 1024


@pytest.fixture
def owners(images):
    """The IPC owners of the file (ipc: shareable), running, named unique_name("lint-<service>"); removed after."""
    compose = yaml.safe_load(COMPOSE.read_text())["services"]
    names: dict[str, str] = {}
    try:
        for name, service in compose.items():
            if service.get("ipc") == "shareable":
                container = unique_name(f"lint-{name}")
                subprocess.run(
                    [
                        "docker",
                        "run",
                        "-d",
                        "--name",
                        container,
                        "--network",
                        "none",
                        *docker_args(service, names),
                        BUSYBOX,
                        "sleep",
                        "300",
                    ],
                    check=True,
                    capture_output=True,
                )
                names[name] = container
                if service.get("container_name"):
                    names[service["container_name"]] = container
        yield compose, names
    finally:
        for container in set(names.values()):
            subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def test_lint_sizes_match_the_engine(owners, capsys):
    compose, names = owners
    assert main(["lint", str(COMPOSE), "--format", "json"]) == 0
    reports = {r["target"]["name"].split(":")[-1]: r for r in validate(json.loads(capsys.readouterr().out))["reports"]}
    compared = []
    for name, service in compose.items():
        lint_size = reports[name]["shm"]["size_bytes"]
        ipc_owner = (service.get("ipc") or "").partition(":")[2]
        if lint_size is None:  # the host's /dev/shm, or an IPC owner outside the file: lint says it cannot know
            assert service.get("ipc") == "host" or ipc_owner not in names, name
            continue
        assert df_shm_bytes(*docker_args(service, names)) == lint_size, name
        compared.append(name)
    assert sorted(compared) == sorted(
        [
            "trainer",
            "evaluator",
            "preprocess",
            "augment",
            "feature-store",
            "feature-reader",
            "feature-follower",
            "bigshm-smallmem",
        ]
    )


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
