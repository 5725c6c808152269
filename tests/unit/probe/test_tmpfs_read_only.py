"""Whether a tmpfs at /dev/shm is read-only, as Docker mounts it: ro and rw are one mount flag (MS_RDONLY), and of
the two the last written wins (moby's MergeTmpfsOptions keeps the last option of each flag; mount/flags.go gives ro
and rw the same one). In every form whose tmpfs options Docker reads: compose's `tmpfs:`, a run line's --tmpfs, an
inspect's HostConfig.Tmpfs, ECS's mountOptions."""

from __future__ import annotations

import json

import pytest

from shmdoctor.probe import docker, files
from tests.helpers import DATA

CASES = [("ro", True), ("rw", False), ("ro,rw", False), ("rw,ro", True), ("noexec,ro,nosuid", True),
         ("ro,noexec,rw,mode=1777", False), ("mode=1777", False)]  # fmt: skip


def read(tmp_path, name: str, text: str):
    (tmp_path / name).write_text(text)
    [found] = files.read([str(tmp_path / name)]).definitions
    return found.facts.shm


@pytest.mark.parametrize("options, read_only", CASES)
def test_compose_tmpfs(tmp_path, options, read_only):
    text = f"services:\n  t:\n    image: x\n    tmpfs: /dev/shm:{options},size=512m\n"
    assert read(tmp_path, "compose.yml", text).read_only is read_only


@pytest.mark.parametrize("options, read_only", CASES)
def test_a_run_lines_tmpfs(tmp_path, options, read_only):
    assert read(tmp_path, "run.sh", f"docker run --tmpfs /dev/shm:{options},size=512m x\n").read_only is read_only


@pytest.mark.parametrize("options, read_only", CASES)
def test_an_inspects_tmpfs(options, read_only):
    info = json.loads((DATA / "inspect" / "tmpfs.json").read_text())  # `docker run --tmpfs /dev/shm:size=512m`
    info["HostConfig"]["Tmpfs"] = {"/dev/shm": f"{options},size=512m"}
    assert docker.shm_of(info).read_only is read_only


@pytest.mark.parametrize("options, read_only", CASES)
def test_ecs_mount_options(tmp_path, options, read_only):
    tmpfs = {"containerPath": "/dev/shm", "size": 512, "mountOptions": options.split(",")}
    task = {"family": "t", "containerDefinitions": [{"name": "c", "image": "x", "linuxParameters": {"tmpfs": [tmpfs]}}]}
    assert read(tmp_path, "task.json", json.dumps(task)).read_only is read_only
