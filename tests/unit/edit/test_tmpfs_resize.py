"""A tmpfs at /dev/shm written again by --fix: of the size asked and read-write, every other option of Docker's
and Podman's kept where it was written. The options are moby's (mount/flags.go and MergeTmpfsOptions: the mount
flags, and size, mode, uid, gid, nr_inodes, nr_blocks, mpol); ro and rw are the one flag MS_RDONLY, of which the last
written wins, so a /dev/shm written again without ro is read-write whatever came before it. The same in each form
that writes a tmpfs's options: compose's `tmpfs:` (a string and a list), a run line's --tmpfs, ECS's mountOptions;
and at each spelling of the path."""

from __future__ import annotations

import json

import pytest
import yaml

from shmdoctor.cli import main
from shmdoctor.edit.editors import tmpfs_resized

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # needs 1536 MiB
KEPT = [
    "rw", "noexec", "exec", "nosuid", "suid", "nodev", "dev", "noatime", "nodiratime", "strictatime", "sync",
    "mode=1777", "mode=0700", "uid=1000", "gid=1000", "nr_inodes=1k", "mpol=interleave", "rprivate",
]  # fmt: skip


@pytest.mark.parametrize("option", KEPT)
def test_every_other_option_is_kept_in_its_place_and_the_size_is_last(option):
    assert tmpfs_resized(f"{option},size=64m", "2g") == f"/dev/shm:{option},size=2g"
    assert tmpfs_resized(f"size=64m,{option}", "2g") == f"/dev/shm:{option},size=2g"
    assert tmpfs_resized(f"ro,{option}", "2g") == f"/dev/shm:{option},size=2g"
    assert tmpfs_resized(f"{option},ro,size=64m", "2g") == f"/dev/shm:{option},size=2g"


@pytest.mark.parametrize(
    "options, resized",
    [
        ("", "/dev/shm:size=2g"),  # --tmpfs /dev/shm: no size, the kernel's half of memory
        ("ro", "/dev/shm:size=2g"),
        ("ro,size=64m", "/dev/shm:size=2g"),
        ("size=64m,ro", "/dev/shm:size=2g"),
        ("rw,ro,size=64m", "/dev/shm:rw,size=2g"),  # read-only as written (the last wins): rw after the change
        ("ro,noexec,ro,size=1g,size=64m", "/dev/shm:noexec,size=2g"),  # every ro and every size
        ("nr_blocks=16384,size=64m", "/dev/shm:nr_blocks=16384,size=2g"),  # the kernel takes the last of the two
        ("noexec,,nosuid", "/dev/shm:noexec,nosuid,size=2g"),  # an empty option, dropped
    ],
)
def test_ro_and_the_old_size_are_dropped_wherever_written(options, resized):
    assert tmpfs_resized(options, "2g") == resized


def fix(tmp_path, name: str, text: str) -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    code = main(["lint", str(path), "--fix", *LOADER])
    return code, path.read_text()


@pytest.mark.parametrize("path", ["/dev/shm", "/dev/shm/", "//dev/shm"])
def test_a_compose_tmpfs_string_at_any_spelling_is_made_read_write_at_the_size(tmp_path, path):
    text = f"services:\n  t:\n    image: pytorch/pytorch\n    tmpfs: {path}:ro,mode=1777,size=64m\n"
    code, after = fix(tmp_path, "compose.yml", text)
    assert code == 1 and yaml.safe_load(after)["services"]["t"]["tmpfs"] == "/dev/shm:mode=1777,size=1536m"
    assert main(["lint", str(tmp_path / "compose.yml"), *LOADER]) == 0  # neither too small nor read-only now


def test_a_compose_tmpfs_list_entry_is_made_read_write_and_the_others_left(tmp_path):
    text = "services:\n  t:\n    image: pytorch/pytorch\n    tmpfs:\n"
    text += "      - /run:ro\n      - /dev/shm:uid=1000,ro,size=64m\n"
    code, after = fix(tmp_path, "compose.yml", text)
    written = yaml.safe_load(after)["services"]["t"]["tmpfs"]
    assert code == 1 and written == ["/run:ro", "/dev/shm:uid=1000,size=1536m"]


def test_a_run_lines_read_only_tmpfs_is_made_read_write_at_the_size(tmp_path):
    text = "docker run --tmpfs //dev/shm:nosuid,ro,size=64m pytorch/pytorch python train.py\n"
    code, after = fix(tmp_path, "run.sh", text)
    assert code == 1 and after == text.replace("//dev/shm:nosuid,ro,size=64m", "/dev/shm:nosuid,size=1536m")


@pytest.mark.parametrize("path", ["/dev/shm", "/dev/shm/"])
def test_an_ecs_read_only_tmpfs_loses_ro_and_keeps_its_other_options(tmp_path, path):
    tmpfs = {"containerPath": path, "size": 64, "mountOptions": ["noexec", "ro", "mode=1777"]}
    task = {"family": "t", "containerDefinitions": [{"name": "c", "image": "pytorch/pytorch", "memory": 4096}]}
    task["containerDefinitions"][0]["linuxParameters"] = {"tmpfs": [tmpfs]}
    code, after = fix(tmp_path, "task.json", json.dumps(task, indent=2) + "\n")
    fixed = json.loads(after)["containerDefinitions"][0]["linuxParameters"]["tmpfs"][0]
    assert code == 1 and fixed == {"containerPath": path, "size": 1536, "mountOptions": ["noexec", "mode=1777"]}
    assert main(["lint", str(tmp_path / "task.json"), *LOADER]) == 0


def test_an_ecs_read_only_tmpfs_of_the_size_needed_is_made_read_write(tmp_path):
    tmpfs = {"containerPath": "/dev/shm", "size": 2048, "mountOptions": ["ro"]}
    task = {"family": "t", "containerDefinitions": [{"name": "c", "image": "pytorch/pytorch", "memory": 4096}]}
    task["containerDefinitions"][0]["linuxParameters"] = {"tmpfs": [tmpfs]}
    code, after = fix(tmp_path, "task.json", json.dumps(task, indent=2) + "\n")
    fixed = json.loads(after)["containerDefinitions"][0]["linuxParameters"]["tmpfs"][0]
    assert code == 1 and fixed == {"containerPath": "/dev/shm", "size": 2048, "mountOptions": []}
