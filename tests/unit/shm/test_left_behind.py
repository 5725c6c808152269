"""What a job's dead left in a tmpfs directory (run's leftovers), on real files and real processes, and the clean
command that frees exactly those."""

import os
import subprocess
import sys

import pytest

from shmdoctor.shm import removal


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


@pytest.fixture
def folder(tmp_path):
    """Before the job: one old leftover. During it: a dead worker's, a live process's, NCCL's, an unknown file."""
    (tmp_path / f"torch_{dead_pid()}_1_0").write_bytes(b"x" * 8192)
    before = {os.stat(tmp_path / f).st_ino for f in os.listdir(tmp_path)}
    dead = dead_pid()
    for name in (f"torch_{dead}_7_0", f"torch_{os.getpid()}_7_1", "nccl-AbC123", "notes.txt"):
        (tmp_path / name).write_bytes(b"x" * 4096)
    return tmp_path, before, dead


@pytest.mark.parametrize("visible", [True, False])
def test_only_what_appeared_during_the_job_and_whose_creator_is_gone(folder, monkeypatch, visible):
    directory, before, dead = folder
    monkeypatch.setattr(removal, "creators_visible", lambda: visible)
    plan = removal.left_behind(str(directory), before, job={dead, 1})
    names = [e.name for e in plan.leaked]
    # the creator-less NCCL file counts only where creators are visible: elsewhere it may be a peer's
    assert names == (["nccl-AbC123", f"torch_{dead}_7_0"] if visible else [f"torch_{dead}_7_0"])
    assert all(e.bytes == 4096 for e in plan.leaked)


def test_outside_the_jobs_pids_a_creator_cannot_be_told_from_a_peers(folder, monkeypatch):
    directory, before, dead = folder
    monkeypatch.setattr(removal, "creators_visible", lambda: False)
    assert removal.left_behind(str(directory), before, job={1}).leaked == ()


def test_the_clean_command_names_exactly_what_run_found(monkeypatch):
    names = ["torch_9_1_0", "torch_10_2_1"]
    monkeypatch.setattr(removal, "creators_visible", lambda: True)
    assert removal.clean_command("/dev/shm", names) == "shmdoctor clean --yes torch_9_1_0 torch_10_2_1"
    many = [f"torch_{n}_1_0" for n in range(removal.CLEAN_NAMES + 1)]
    assert removal.clean_command("/dev/shm", many) == "shmdoctor clean --yes"  # clean tells them itself
    monkeypatch.setattr(removal, "creators_visible", lambda: False)
    monkeypatch.setattr(removal, "shared_with_the_host", lambda d: None)
    assert removal.clean_command("/dev/shm", names) == "shmdoctor clean --yes --exclusive torch_9_1_0 torch_10_2_1"
    monkeypatch.setattr(removal, "shared_with_the_host", lambda d: "it is the host's")
    assert removal.clean_command("/dev/shm", names[:1]) == (
        "shmdoctor clean --yes torch_9_1_0  # on the host, or in a container started with --pid=host"
    )
