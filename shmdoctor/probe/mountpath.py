"""A container path as the engines take it: /dev/shm however it is written (/dev/shm/, //dev/shm, /dev/./shm)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from ..model import SHM


def at_shm(path: Any) -> bool:
    """Whether a container path is /dev/shm, cleaned as Go's filepath.Clean cleans it (any run of slashes is one,
    unlike POSIX's normpath, which keeps two leading ones). Every engine mounts there: containerd's mergeMounts and
    Podman's getTmpfsMounts clean the destination; Docker keeps a tmpfs at /dev/shm/ beside its own /dev/shm (its
    withMounts compares the path as written) and mounts it after, over its own; runc mounts at the cleaned path. A
    relative path is refused by every engine, so is not it."""
    text = str(path)
    return text.startswith("/") and posixpath.normpath("/" + text.lstrip("/")) == SHM


def tmpfs_read_only(options: Iterable[str]) -> bool:
    """Whether a tmpfs's options (Docker's: --tmpfs, compose's tmpfs:, HostConfig.Tmpfs, ECS's mountOptions) mount
    it read-only: ro and rw are one flag, MS_RDONLY, and the last of them written wins (moby's MergeTmpfsOptions)."""
    last = [o for o in (o.strip() for o in options) if o in ("ro", "rw")]
    return bool(last) and last[-1] == "ro"
