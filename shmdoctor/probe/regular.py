"""Open what a user names as input only when it is a regular file: a FIFO without a writer would block the open, a
device (/dev/zero, /dev/urandom) would be read without end. Opened without blocking, then checked: no race between
a check and the open."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from ..errors import UsageError


def open_regular(path: str) -> BinaryIO:
    """The file, open for reading in binary; UsageError (one line) for what cannot be opened or is not a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror or e}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device"
        raise UsageError(f"{path}: cannot read: {kind} is not a regular file (give a file, or - for stdin)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")
