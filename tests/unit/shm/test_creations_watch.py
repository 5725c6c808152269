"""How a watch is set up and what it is told, against the kernel's own definitions (inotify(7), linux/inotify.h:
IN_ACCESS 0x1, IN_CREATE 0x100, IN_Q_OVERFLOW 0x4000, IN_IGNORED 0x8000, IN_ISDIR 0x40000000; a name NUL-padded to
a multiple of 16 bytes): a file read after it was created is told once; the descriptor is non-blocking and closed
on exec (run's command must not inherit it); where libc cannot give inotify, or refuses an instance or a watch,
there is no watch, and nothing is left open."""

from __future__ import annotations

import fcntl
import os
import struct

import pytest

from shmdoctor.shm import creations as module
from shmdoctor.shm.creations import Creations, parse


def event(mask: int, name: bytes = b"", wd: int = 1) -> bytes:
    padded = name + b"\0" * (-(len(name) + 1) % 16 + 1) if name else b""
    return struct.pack("iIII", wd, mask, 0, len(padded)) + padded


def test_the_kernels_events_are_read_as_creations_directories_and_losses():
    data = (
        event(0x100, b"torch_12_345_0")
        + event(0x40000100, b"cache")  # a directory created: not a segment
        + event(0x4000, wd=-1)  # the queue overflowed
        + event(0x100, b"x" * 16)  # a name of 16 bytes: 32 with its padding
        + event(0x8000)  # the watch removed (its directory gone): no name
    )
    assert parse(data) == (["torch_12_345_0", "x" * 16], True)


def test_a_file_read_after_it_was_created_is_told_once(tmp_path):
    creations = Creations.watch(str(tmp_path))
    assert creations is not None
    try:
        flags = fcntl.fcntl(creations.fileno(), fcntl.F_GETFL)  # first: a blocking one would hang the reads below
        assert flags & os.O_NONBLOCK and fcntl.fcntl(creations.fileno(), fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        path = tmp_path / "torch_1_2_3"
        path.write_bytes(b"segment")
        for _ in range(3):
            path.read_bytes()  # accesses: no event of this watch
        assert creations.read() == (["torch_1_2_3"], False)
        assert creations.read() == ([], False)
    finally:
        creations.close()


class Libc:
    """libc's two calls, answering what is asked of them; closes recorded."""

    def __init__(self, fd: int, wd: int) -> None:
        self.asked: list[tuple] = []

        def init(flags: int) -> int:
            self.asked.append(("init", flags))
            return fd

        def add(fd: int, path: bytes, mask: int) -> int:
            self.asked.append(("add", fd, path, mask))
            return wd

        self.inotify_init1, self.inotify_add_watch = init, add


@pytest.mark.parametrize(
    "libc, watched",
    [
        (Libc(fd=-1, wd=1), False),  # EMFILE: the user's instances used up
        (Libc(fd=7, wd=-1), False),  # ENOSPC: the user's watches used up
        (Libc(fd=0, wd=1), True),  # descriptor 0, where stdin is closed, is a descriptor
    ],
)
def test_an_instance_or_a_watch_refused_is_no_watch_and_nothing_left_open(monkeypatch, tmp_path, libc, watched):
    closed: list[int] = []
    monkeypatch.setattr(module.ctypes, "CDLL", lambda name, use_errno: libc)
    monkeypatch.setattr(module.os, "close", closed.append)
    got = Creations.watch(str(tmp_path))
    assert (got is not None) is watched
    if watched:
        assert got is not None and got.fileno() == 0 and not closed
    elif libc.asked[-1][0] == "add":
        assert closed == [7]  # the instance whose watch was refused
    else:
        assert libc.asked == [("init", os.O_NONBLOCK | os.O_CLOEXEC)] and not closed  # nothing to watch with


@pytest.mark.parametrize("error", [OSError("no libc"), AttributeError("no inotify_init1")])
def test_a_libc_without_inotify_is_no_watch(monkeypatch, tmp_path, error):
    def cdll(name, use_errno):
        raise error

    monkeypatch.setattr(module.ctypes, "CDLL", cdll)
    assert Creations.watch(str(tmp_path)) is None
