"""lint --fix rewrites a file's text and nothing else of it, in the fast lane: the mode (each permission bit, the
set-group-ID bit too), the owner and group, and the line endings stay as they were. (The integration lane's
tests/integration/process/test_fix_writes.py writes as other users, through links and mounts.)"""

from __future__ import annotations

import os
import stat

import pytest

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # needs 1536m
FAILING = "# the stack\nservices:\n  train:\n    image: pytorch/pytorch   # pinned below\n"
FIXED = FAILING + "    shm_size: 1536m\n"
MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: pytorch/pytorch
"""


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o664, 0o600, 0o755, 0o2664], ids=oct)
def test_the_mode_stays(tmp_path, mode):
    path = tmp_path / "compose.yml"
    path.write_text(FAILING)
    os.chmod(path, mode)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert path.read_text() == FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


def owners() -> list[tuple[int, int]]:
    """Ours, and where the test runs as root (CI's container), another user's and group's."""
    return [(os.geteuid(), os.getegid())] + ([(65534, 65534), (0, 65534)] if os.geteuid() == 0 else [])


@pytest.mark.parametrize("owner", owners(), ids=str)
def test_the_owner_and_group_stay(tmp_path, owner):
    path = tmp_path / "compose.yml"
    path.write_text(FAILING)
    os.chown(path, *owner)
    os.chmod(path, 0o664)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    status = os.stat(path)
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (*owner, 0o664)
    assert path.read_text() == FIXED


@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("name,text", [("compose.yml", FAILING), ("pod.yaml", MANIFEST)], ids=["compose", "k8s"])
def test_line_endings_stay_on_every_line_and_a_second_fix_changes_nothing(tmp_path, ending, name, text):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", ending).encode())
    os.chmod(path, 0o640)
    main(["lint", str(path), "--fix", *LOADER])
    after = path.read_bytes()
    assert len(after.splitlines()) > len(text.splitlines())  # lines were added
    assert after.count(b"\n") == after.count(ending.encode()), after  # each line ends as the file's did
    assert after.endswith(ending.encode())
    if ending == "\n":
        assert b"\r" not in after
    main(["lint", str(path), "--fix", *LOADER])
    assert path.read_bytes() == after
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_a_file_without_a_newline_at_its_end_gets_none_added_before_its_text(tmp_path):
    path = tmp_path / "compose.yml"
    path.write_text(FAILING.rstrip("\n"))
    main(["lint", str(path), "--fix", *LOADER])
    after = path.read_text()
    assert after.startswith(FAILING) and "shm_size: 1536m" in after
