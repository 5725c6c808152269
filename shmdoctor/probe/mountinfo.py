"""Parse /proc/<pid>/mountinfo and tell where a /dev/shm mount comes from (FACTS.md, 'Docker: where /dev/shm ...')."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError
from ..model import ENGINE_DEFAULT_SHM, SHM, Runtime, ShmSource, Value
from ..sizes import format_size, parse_tmpfs_size

_DEFAULT = format_size(ENGINE_DEFAULT_SHM)


@dataclass(frozen=True, eq=False, repr=False)
class Mount(Value):
    """One line of /proc/self/mountinfo."""

    mount_id: int
    parent_id: int
    root: str
    mount_point: str
    options: tuple[str, ...]  # per-mount options
    fstype: str
    source: str
    super_options: tuple[str, ...]  # per-superblock options: size= lives here

    @property
    def size_bytes(self) -> int | None:
        for opt in self.super_options:
            if opt.startswith("size="):
                return parse_tmpfs_size(opt[5:])
        return None

    def line(self) -> str:
        return f"{self.source} on {self.mount_point} type {self.fstype} ({','.join(self.super_options)})"


_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    # The kernel escapes space, tab, newline and backslash as octal: \040 \011 \012 \134; every other byte is
    # written as is (UTF-8 included), so only those escapes are undone.
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field) if "\\" in field else field


def parse_line(line: str) -> Mount:
    """One mountinfo line: 'ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS'."""
    head, sep, tail = line.rstrip("\n").partition(" - ")
    # Fields are separated by single spaces; other whitespace (\x1c-\x1f, \v, \f) may be part of a path.
    fields, rest = head.split(" "), tail.split(" ")
    if not sep or len(fields) < 6 or len(rest) < 2:
        raise UsageError(f"not a mountinfo line: {line.strip()[:80]!r}")
    try:
        mount_id, parent_id = int(fields[0]), int(fields[1])
    except ValueError:
        raise UsageError(f"not a mountinfo line: {line.strip()[:80]!r}") from None
    return Mount(
        mount_id=mount_id,
        parent_id=parent_id,
        root=_unescape(fields[3]),
        mount_point=_unescape(fields[4]),
        options=tuple(fields[5].split(",")),
        fstype=rest[0],
        source=_unescape(rest[1]),
        super_options=tuple(rest[2].split(",")) if len(rest) > 2 else (),
    )


def parse(text: str) -> list[Mount]:
    return [parse_line(line) for line in text.splitlines() if line.strip()]


def find(mounts: list[Mount], point: str = SHM) -> Mount | None:
    """The mount visible at point: the last one mounted there (mounts stack)."""
    found = [m for m in mounts if m.mount_point == point]
    return found[-1] if found else None


def shm_source(mount: Mount | None, *, in_container: bool, ipc_host: bool, runtime: Runtime) -> tuple[ShmSource, str]:
    """Where the /dev/shm mount comes from, and how we know, as seen from inside the target."""
    if mount is None:
        return "none", "no mount at /dev/shm"
    if not in_container:
        return "system", f"the machine's own /dev/shm: {mount.line()}"
    if ipc_host:
        return "host-ipc", "IPC namespace is the host's (--ipc=host / hostIPC): the host's /dev/shm"
    if mount.source == "shm":
        # The engine's own shm mount: Docker's --shm-size, or containerd/CRI-O's default in a pod.
        if runtime == "kubernetes":
            return (
                "runtime-shm",
                f"the container runtime's /dev/shm ({_DEFAULT} unless a volume replaces it): {mount.line()}",
            )
        if runtime == "podman":
            return "podman-shm", f"Podman's shm mount (--shm-size; 64000k by default): {mount.line()}"
        return "docker-shm", f"Docker's shm mount (--shm-size; {_DEFAULT} by default): {mount.line()}"
    if mount.fstype == "tmpfs" and runtime == "kubernetes":
        return "k8s-emptydir", f"a memory-backed emptyDir mounted at /dev/shm: {mount.line()}"
    if mount.fstype == "tmpfs" and "noexec" in mount.options:
        # Docker's --tmpfs and compose's tmpfs mount with noexec,nosuid,nodev; a bind keeps the host's options.
        return "tmpfs", f"a tmpfs mounted over /dev/shm (--tmpfs /dev/shm:size=...): {mount.line()}"
    if mount.fstype == "tmpfs":
        return "host", f"the host's /dev/shm bound in (-v /dev/shm:/dev/shm): {mount.line()}"
    return "unknown", mount.line()
