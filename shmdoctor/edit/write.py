"""A fixed file put in place of the user's as a careful editor does. The new text goes into a temporary file beside
it (unnamed, O_TMPFILE, until the instant before the rename, so that a SIGKILL leaves nothing), which takes the
file's owner, group, mode and extended attributes and is fsync'd, then renamed over it, and the folder fsync'd.
Where a rename would not replace the file the user sees (a hard link, a bind-mounted file, a folder they may not
write or a sticky one, an owner they cannot give), the file is written in place instead: one write from its start,
then truncated. Nothing is written over a file that changed since lint read it (its text is compared just before),
that its user could not write, or that a link reaches from outside the paths given: NotWritten says why."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterable

PREFIX = ".shmdoctor-fix-"
_IN_PLACE = {errno.EBUSY, errno.EXDEV, errno.EPERM, errno.EACCES}  # a rename that cannot replace this file


class NotWritten(Exception):
    """Why a file is left as it is (one line, after its name)."""


class _InPlace(Exception):
    """A rename cannot replace the file the user sees: write it in place."""


def within(path: str, given: Iterable[str]) -> bool:
    """No link leads out: the path names its file without one, or the file it reaches is one of the paths given
    or inside one of them (a compose file's include: outside them is read through no link: it is written)."""
    real = os.path.realpath(path)
    if real == os.path.abspath(path):
        return True
    return any(os.path.commonpath([real, root]) == root for root in map(os.path.realpath, given))


def write(path: str, before: str, after: str) -> None:
    """`after` in place of the file at `path` (its target, where it is a link), which must still hold `before`."""
    real = os.path.realpath(path)
    folder, name = os.path.split(real)
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise NotWritten(e.strerror) from None
    try:
        _write(dir_fd, name, before.encode(), after.encode())
    except OSError as e:
        raise NotWritten(e.strerror or str(e)) from None
    finally:
        os.close(dir_fd)


def _write(dir_fd: int, name: str, before: bytes, after: bytes) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotWritten("not a regular file")
        _unchanged(fd, before)
        _writable(dir_fd, name, fd, status)
        in_place = status.st_nlink > 1 or status.st_dev != os.fstat(dir_fd).st_dev  # a hard link; a mount point
        if not in_place:
            try:
                _replace(dir_fd, name, fd, status, before, after)
                return
            except _InPlace:
                pass
        _in_place(dir_fd, name, status, before, after)
    finally:
        os.close(fd)


def _unchanged(fd: int, before: bytes) -> None:
    """The file open at fd holds `before`, byte for byte."""
    if os.pread(fd, len(before) + 1, 0) != before:
        raise NotWritten("it changed since lint read it")


def _writable(dir_fd: int, name: str, fd: int, status: os.stat_result) -> None:
    """Refused where the user who runs it could not write the file (their real ids), or (root, who may write
    anything) where no one may: a file marked read-only is not rewritten behind its owner's back."""
    if os.fstatvfs(fd).f_flag & os.ST_RDONLY:
        raise NotWritten(os.strerror(errno.EROFS))
    if not os.access(name, os.W_OK, dir_fd=dir_fd) or not status.st_mode & 0o222:
        raise NotWritten(f"it is read-only to you (mode {stat.S_IMODE(status.st_mode):04o})")


def _replace(dir_fd: int, name: str, fd: int, status: os.stat_result, before: bytes, after: bytes) -> None:
    """The new text in a temporary file beside the file, with its owner, mode and attributes, renamed over it."""
    try:
        temporary, named = _temporary(dir_fd)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EPERM):  # a folder the user may not write: the file itself they may
            raise _InPlace from None
        raise
    try:
        try:
            _write_all(temporary, after)
            _same_owner(temporary, status)
            _copy_attributes(fd, temporary)
        except PermissionError:  # an owner or an attribute it may not give: the file keeps its own, in place
            raise _InPlace from None
        os.fsync(temporary)
        _unchanged(fd, before)
        if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ino != status.st_ino:
            raise NotWritten("it changed since lint read it")  # another editor's save renamed over it
        if named is None:  # named the instant before the rename: the one moment a SIGKILL would leave it
            named = PREFIX + secrets.token_hex(6)
            os.link(f"/proc/self/fd/{temporary}", named, dst_dir_fd=dir_fd, follow_symlinks=True)
        try:
            os.replace(named, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as e:
            if e.errno in _IN_PLACE:  # EBUSY: a bind-mounted file; EPERM: a sticky folder, the file not theirs
                raise _InPlace from None
            raise
        named = None
        os.fsync(dir_fd)
    finally:
        os.close(temporary)
        if named is not None:
            os.unlink(named, dir_fd=dir_fd)


def _temporary(dir_fd: int) -> tuple[int, str | None]:
    """A new file in the folder, open for writing: unnamed where the kernel and /proc allow it, else named."""
    if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
        try:
            return os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=dir_fd), None
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):  # a file system without O_TMPFILE
                raise
    named = PREFIX + secrets.token_hex(6)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(named, flags, 0o600, dir_fd=dir_fd), named


def _same_owner(fd: int, status: os.stat_result) -> None:
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (status.st_uid, status.st_gid):
        os.fchown(fd, status.st_uid, status.st_gid)
    os.fchmod(fd, stat.S_IMODE(status.st_mode))  # after the owner: a change of owner clears set-user-ID


def _copy_attributes(source: int, fd: int) -> None:
    """Extended attributes (ACLs, SELinux labels) as the file has them."""
    try:
        names = os.listxattr(source)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return
        raise
    for key in names:
        os.setxattr(fd, key, os.getxattr(source, key))


def _write_all(fd: int, data: bytes, offset: int = 0) -> None:
    view = memoryview(data)
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


def _in_place(dir_fd: int, name: str, status: os.stat_result, before: bytes, after: bytes) -> None:
    """The file itself rewritten: one write from its start (never emptied first), the rest cut, fsync'd."""
    fd = os.open(name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if os.fstat(fd).st_ino != status.st_ino:
            raise NotWritten("it changed since lint read it")
        _unchanged(fd, before)
        _write_all(fd, after)
        os.ftruncate(fd, len(after))
        os.fsync(fd)
    finally:
        os.close(fd)
