"""lint --fix writes a user's file as a careful editor does, run as a user runs it against real files: another save
made while it works is never lost, the owner, group and mode stay, a file its user could not write is refused, a
link out of the folder given is never followed, a hard link and a bind-mounted file are written in place, a full or
read-only disk is one line, and a SIGKILL leaves no temporary file behind.

Root is needed (files of another owner, setpriv to another user, mount): missing elsewhere, a failure under CI."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tests.helpers import REPO, WAIT, missing

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # needs 1536m
FAILING = "services:\n  train:\n    image: pytorch/pytorch\n"
FIXED = FAILING + "    shm_size: 1536m\n"
NOBODY = 65534
IN_OPEN = 0x20


@pytest.fixture
def root():
    if os.geteuid() != 0:
        missing("lint --fix's writes as other users need root (setpriv, chown, mount)")


@pytest.fixture
def folder(root):
    """A folder every user can enter (pytest's own tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="shmdoctor-fix-"))
    path.chmod(0o755)
    yield path
    for mount in reversed([line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]):
        if mount.startswith(str(path)):
            subprocess.run(["umount", "-l", mount], check=False)
    shutil.rmtree(path)


def lint_fix(*paths, user: int | None = None) -> subprocess.CompletedProcess:
    """`shmdoctor lint PATHS --fix` in a process of its own, as root or (setpriv) as another user."""
    as_user = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    argv = [*as_user, sys.executable, "-m", "shmdoctor", "lint", *map(str, paths), "--fix", *LOADER]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=120)


def errors(proc: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("shmdoctor: error: ")]


def no_temporary_left(directory: Path) -> None:
    assert not [p.name for p in directory.iterdir() if p.name.startswith(".shmdoctor-fix-")]


class Inotify:
    """The kernel's own notice of what is done to a file or folder (inotify(7), through libc)."""

    def __init__(self, path: Path, mask: int):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_CLOEXEC)
        assert self.fd >= 0 and self.libc.inotify_add_watch(self.fd, os.fsencode(path), mask) >= 0

    def names(self):
        """Each event's name (empty for the watched file itself), as they come."""
        while True:
            data = os.read(self.fd, 65536)
            while data:
                _, _, _, size = struct.unpack("iIII", data[:16])
                yield data[16 : 16 + size].rstrip(b"\0").decode()
                data = data[16 + size :]

    def close(self) -> None:
        os.close(self.fd)


def saved_by_an_editor(path: Path, text: str) -> None:
    """What an editor's save does: the new text in a file beside it, renamed over it."""
    beside = path.with_name(path.name + ".swp")
    beside.write_text(text)
    beside.replace(path)


def _saved_at_open(folder: Path, path: Path, at_open: int, save) -> subprocess.CompletedProcess:
    """lint --fix of the folder, save() done the moment path is opened the at_open-th time."""
    watch = Inotify(path, IN_OPEN)

    def save_at_open() -> None:
        for count, _ in enumerate(watch.names(), 1):
            if count == at_open:
                save()
                return

    saver = threading.Thread(target=save_at_open, daemon=True)
    saver.start()
    try:
        return lint_fix(folder)
    finally:
        saver.join(WAIT)
        watch.close()


def appended(path: Path, text: str) -> None:
    """What `echo ... >> FILE` does: the file itself grown, the same inode, its start unchanged."""
    with path.open("a") as file:
        file.write(text.removeprefix(path.read_text()))


@pytest.mark.parametrize(
    "at_open, save",
    [(2, saved_by_an_editor), (3, saved_by_an_editor), (3, appended)],
    ids=["while-lint-judges", "while-the-fix-is-made", "appended-while-the-fix-is-made"],
)
def test_a_save_made_while_it_works_is_kept_and_the_file_not_written(folder, at_open, save):
    """The user saves the file the moment --fix opens it (lint's read, then the fix's own; the first open is the
    compose set's look for include/extends, before the text lint judges), as an editor does, or by appending to it
    once lint has read it (appended as lint opens it, lint may read either text): that file is not written, one line
    says why, exit 2; the other file of the folder is still written. A save the loaded machine makes only after
    --fix has finished is another case (the fix written, then saved over): tried again, up to five times."""
    mine, other = folder / "compose.yml", folder / "other.yml"
    theirs = FAILING + "    shm_size: 8g  # the user's own\n"
    for _ in range(5):
        mine.write_text(FAILING)
        other.write_text(FAILING)
        proc = _saved_at_open(folder, mine, at_open, lambda: save(mine, theirs))
        if errors(proc):  # the save landed while --fix worked
            break
    assert errors(proc) == [f"shmdoctor: error: {mine}: not written: it changed since lint read it"]
    assert proc.returncode == 2
    assert mine.read_text() == theirs and other.read_text() == FIXED
    no_temporary_left(folder)


def test_the_owner_group_and_mode_stay_when_root_writes(folder):
    """`docker run -v $PWD:/src` or sudo: root writes a file of nobody's, mode 640, which stays nobody's, 640."""
    path = folder / "compose.yml"
    path.write_text(FAILING)
    os.chown(path, NOBODY, NOBODY)
    path.chmod(0o640)
    proc = lint_fix(path)
    assert proc.returncode == 1 and errors(proc) == []
    status = path.stat()
    assert (status.st_uid, status.st_gid, status.st_mode & 0o7777) == (NOBODY, NOBODY, 0o640)
    assert path.read_text() == FIXED


def test_a_file_its_user_cannot_write_is_refused(folder):
    """A 0444 file in the user's own writable folder: their shell cannot write it, neither does --fix."""
    path = folder / "compose.yml"
    path.write_text(FAILING)
    os.chown(path, NOBODY, NOBODY)
    os.chown(folder, NOBODY, NOBODY)
    path.chmod(0o444)
    proc = lint_fix(path, user=NOBODY)
    assert errors(proc) == [f"shmdoctor: error: {path}: not written: it is read-only to you (mode 0444)"]
    assert proc.returncode == 2 and path.read_text() == FAILING


@pytest.mark.parametrize("mode, written", [(0o445, False), (0o446, True), (0o464, True)])
def test_root_writes_a_file_only_where_someone_may(folder, mode, written):
    """Root may write anything; --fix as root writes a file only where its mode gives someone the write bit (0445:
    no one, an execute bit beside; 0446: others; 0464: the group), its mode kept."""
    path = folder / "compose.yml"
    path.write_text(FAILING)
    path.chmod(mode)
    proc = lint_fix(path)
    if written:
        assert errors(proc) == [] and proc.returncode == 1 and path.read_text() == FIXED
    else:
        assert errors(proc) == [f"shmdoctor: error: {path}: not written: it is read-only to you (mode {mode:04o})"]
        assert proc.returncode == 2 and path.read_text() == FAILING
    assert path.stat().st_mode & 0o7777 == mode


def test_a_link_out_of_the_folder_given_is_not_followed(folder):
    """A link in the folder to a file outside it: that file is not written, said, exit 2; the others are."""
    outside, inside = folder / "outside", folder / "repo"
    outside.mkdir()
    inside.mkdir()
    (outside / "secret.yml").write_text(FAILING)
    (inside / "compose.yml").symlink_to(outside / "secret.yml")
    (inside / "real.yml").write_text(FAILING)
    (inside / "alias.yml").symlink_to(inside / "real.yml")  # a link within: its target is written, once
    proc = lint_fix(inside)
    link = inside / "compose.yml"
    assert errors(proc) == [
        f"shmdoctor: error: {link}: not written: a link to {outside / 'secret.yml'}, outside the paths given"
    ]
    assert proc.returncode == 2
    assert (outside / "secret.yml").read_text() == FAILING and link.is_symlink()
    assert (inside / "real.yml").read_text() == FIXED and (inside / "alias.yml").is_symlink()
    given = lint_fix(link)  # the link named on the command line is the user's choice: its target is written
    assert given.returncode == 1 and (outside / "secret.yml").read_text() == FIXED and link.is_symlink()


def test_a_hard_linked_file_is_written_in_place(folder):
    path, other = folder / "compose.yml", folder / "elsewhere.txt"
    path.write_text(FAILING)
    os.link(path, other)
    inode = path.stat().st_ino
    proc = lint_fix(path)
    assert proc.returncode == 1 and errors(proc) == []
    assert other.read_text() == FIXED and path.stat().st_ino == inode and path.stat().st_nlink == 2


def test_a_bind_mounted_file_is_written_in_place(folder):
    """`docker run -v ./compose.yml:/src/compose.yml`: the file is a mount point, rename over it is EBUSY."""
    source, mounted = folder / "source.yml", folder / "src" / "compose.yml"
    source.write_text(FAILING)
    mounted.parent.mkdir()
    mounted.write_text("")
    subprocess.run(["mount", "--bind", str(source), str(mounted)], check=True)
    proc = lint_fix(mounted)
    assert proc.returncode == 1 and errors(proc) == []
    assert source.read_text() == FIXED
    no_temporary_left(mounted.parent)


def test_a_file_in_a_sticky_folder_it_may_write_but_not_replace_is_written_in_place(folder):
    """/tmp-like: a folder 1777, a file 0666 of root's; nobody may write it, not rename over it (EPERM)."""
    folder.chmod(0o1777)
    path = folder / "compose.yml"
    path.write_text(FAILING)
    path.chmod(0o666)
    proc = lint_fix(path, user=NOBODY)
    assert proc.returncode == 1 and errors(proc) == []
    assert path.read_text() == FIXED and path.stat().st_uid == 0
    no_temporary_left(folder)


@pytest.mark.parametrize(
    ("state", "why"),
    [("full", "No space left on device"), ("read-only", "Read-only file system")],
)
def test_a_disk_that_cannot_take_it_is_one_line(folder, state, why):
    disk = folder / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(disk)], check=True)
    path = disk / "compose.yml"
    path.write_text(FAILING)
    if state == "read-only":
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    else:
        with contextlib.suppress(OSError), open(disk / "filler", "wb", buffering=0) as f:
            while True:  # until the 8 KiB the file system has are taken
                f.write(b"x" * 1024)
    proc = lint_fix(path)
    assert errors(proc) == [f"shmdoctor: error: {path}: not written: {why}"]
    assert proc.returncode == 2 and path.read_text() == FAILING
    no_temporary_left(disk)


def test_the_new_text_is_on_disk_before_it_replaces_the_file(folder):
    """fsync of the new file before the rename (a crash after it finds the whole new text), then of the folder."""
    if shutil.which("strace") is None:
        missing("strace is not installed")
    path = folder / "compose.yml"
    path.write_text(FAILING)
    log = folder / "strace.log"
    calls = "trace=fsync,fdatasync,rename,renameat,renameat2"
    argv = ["strace", "-f", "-e", calls, "-o", str(log), sys.executable, "-m", "shmdoctor", "lint", str(path)]
    proc = subprocess.run([*argv, "--fix", *LOADER], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 1 and path.read_text() == FIXED
    said = [re.sub(r"^\d+ +", "", line) for line in log.read_text().splitlines()]
    renames = [i for i, line in enumerate(said) if line.startswith("rename") and "compose.yml" in line]
    assert len(renames) == 1, said
    assert any(line.startswith(("fsync(", "fdatasync(")) for line in said[: renames[0]]), said
    assert any(line.startswith("fsync(") for line in said[renames[0] + 1 :]), said  # the folder's entry


@pytest.mark.parametrize("call", ["pwrite64", "fsync", "linkat"])
def test_a_sigkill_leaves_no_temporary_file(folder, call):
    """Killed (strace injects SIGKILL) as it writes the new text, as it syncs it, as it names it: no temporary file
    is left and the file is whole, as it was. The one moment left is between the name and the rename."""
    if shutil.which("strace") is None:
        missing("strace is not installed")
    path = folder / "compose.yml"
    path.write_text(FAILING)
    kill = ["strace", "-f", "-o", os.devnull, "-e", f"trace={call}", "-e", f"inject={call}:signal=KILL"]
    argv = [*kill, sys.executable, "-m", "shmdoctor", "lint", str(path), "--fix", *LOADER]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == -signal.SIGKILL or proc.returncode == 128 + signal.SIGKILL, proc.stderr
    no_temporary_left(folder)
    assert path.read_text() == FAILING
