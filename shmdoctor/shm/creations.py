"""The files created in a directory, told by the kernel as they are created (inotify, through ctypes): run ties a
segment to its creator while the creator lives, where a sampler misses a worker that dies between two samples.
Nothing is polled: a quiet directory costs nothing. Bounded: the kernel's queue holds max_queued_events (16384 by
default) and says when it overflowed; a read takes one buffer of events at most."""

from __future__ import annotations

import ctypes
import os
import struct

IN_CREATE = 0x00000100
IN_Q_OVERFLOW = 0x00004000  # the queue was full: events were lost
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name, NUL-padded
READ_BYTES = 64 * 1024  # one read: ~1,300 events of a torch_ name at most, whatever the kernel has queued


def parse(data: bytes) -> tuple[list[str], bool]:
    """A read's events -> the names of the files created (not directories), and whether events were lost before
    them. A name is the kernel's bytes as os.fsdecode gives them back: any bytes at all."""
    names, lost, at = [], False, 0
    while at + _EVENT.size <= len(data):
        _, mask, _, length = _EVENT.unpack_from(data, at)
        name = data[at + _EVENT.size : at + _EVENT.size + length].split(b"\0", 1)[0]
        at += _EVENT.size + length
        if mask & IN_Q_OVERFLOW:
            lost = True
        elif mask & IN_CREATE and not mask & IN_ISDIR and name:
            names.append(os.fsdecode(name))
    return names, lost


class Creations:
    """One directory watched for creations. fileno() is readable when some are queued; read() takes them."""

    def __init__(self, fd: int):
        self.fd = fd

    @classmethod
    def watch(cls, directory: str) -> Creations | None:
        """None where inotify is not to be had: not Linux, no such libc symbol, not a directory, or the user's
        inotify instances or watches used up (max_user_instances, max_user_watches)."""
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        init.argtypes, add.argtypes = [ctypes.c_int], [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        if add(fd, os.fsencode(directory), IN_CREATE | IN_ONLYDIR) < 0:
            os.close(fd)
            return None
        return cls(fd)

    def fileno(self) -> int:
        return self.fd

    def read(self) -> tuple[list[str], bool]:
        """The names created since the last read, oldest first, and whether the kernel lost some ([] when none are
        queued; what one buffer cannot hold waits for the next read)."""
        try:
            return parse(os.read(self.fd, READ_BYTES))
        except BlockingIOError:
            return [], False

    def close(self) -> None:
        os.close(self.fd)
