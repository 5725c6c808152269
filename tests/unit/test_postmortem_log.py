"""explain's log path (postmortem.explain_log) on files written here: what a log is called, how a log that cannot be
read is said, the exit shmdoctor run's line gives, and when the note that the place is unknown is added."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from shmdoctor import postmortem
from shmdoctor.errors import UsageError

BUS = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
# shmdoctor run's status line, as docs/commands/run.md prints it
RUN_EXIT = "shmdoctor run: python train.py exited 135 (SIGBUS) after 11.7 s\n"


def test_a_file_is_named_by_its_path_and_stdin_by_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("app.log", "+crash.log", str(tmp_path / "job.log")):  # after "-" and before it, as strings sort
        Path(name).write_text(BUS)
        assert postmortem.explain_log(name).source == name


def test_a_file_that_opens_but_does_not_read_says_the_systems_words() -> None:
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc")
    with pytest.raises(UsageError) as raised:
        postmortem.explain_log("/proc/self/mem")  # offset 0 is never mapped: read(2) fails EIO
    assert str(raised.value) == f"/proc/self/mem: cannot read: {os.strerror(errno.EIO)}"


def test_run_s_exit_line_is_how_it_ended_and_without_one_the_end_is_unknown(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(BUS + RUN_EXIT)
    ended = postmortem.explain_log(str(log)).exit
    assert ended is not None and (ended.code, ended.seen_by) == (135, "shmdoctor run, line 2")
    log.write_text(BUS)
    assert postmortem.explain_log(str(log)).exit is None


def test_an_ambiguous_text_from_an_unknown_place_says_so_and_a_stated_place_does_not(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(BUS)  # a bus error: /dev/shm where it ran was small, or another mapped file
    assert postmortem.explain_log(str(log)).report.notes == (postmortem.UNKNOWN_NOTE,)
    assert postmortem.explain_log(str(log), shm_bytes=64 * 2**20).report.notes == ()
    log.write_text("$ df -h /dev/shm\nshm  64M  64M  0 100% /dev/shm\n" + BUS)  # the text says where
    assert postmortem.explain_log(str(log)).place.known == "text"  # type: ignore[union-attr]
    assert postmortem.explain_log(str(log)).report.notes == ()
