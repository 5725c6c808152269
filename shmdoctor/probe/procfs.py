"""Containers' /dev/shm read from the host through /proc, with no engine and nothing run inside them.

A process's /dev/shm is `/proc/<pid>/root/dev/shm` (root, in the host's PID namespace: `hostPID: true` in a
DaemonSet). `scan` finds one target per distinct /dev/shm (a tmpfs device) across every mount namespace: a pod's
containers, or containers sharing IPC (`--ipc=container:X`), are one. Each is named from the cgroup path of its
processes (the pod UID, the container ID) and its IPC mode told from the IPC namespace's inode. This is how the
exporter sees containerd and CRI-O nodes, which have no Docker engine. Environment and command lines are never read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import UsageError
from ..model import SHM, Facts, Flag, Ipc, Memory, Runtime, Shm, Target
from . import cgroup, mountinfo
from .local import HOST_IPC_INODE

# A container ID as the runtimes write it in a cgroup path: Docker's cgroupfs `/docker/<id>`, systemd's
# `docker-<id>.scope`, containerd's `cri-containerd-<id>.scope`, CRI-O's `crio-<id>.scope`, Podman's `libpod-<id>`.
_CONTAINER = re.compile(r"(?:(docker|cri-containerd|crio|libpod|containerd)-)?([0-9a-f]{64})(?:\.scope)?")
# A pod: `/kubepods/burstable/pod<uid>` (cgroupfs) or `kubepods-burstable-pod<uid with _>.slice` (systemd).
_POD = re.compile(
    r"(?:kubepods-(?:[a-z]+-)?)?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?"
)
_RUNTIMES = {
    "docker": "docker",
    "cri-containerd": "containerd",
    "containerd": "containerd",
    "crio": "cri-o",
    "libpod": "podman",
}


@dataclass(frozen=True)
class Origin:
    """Whose a process is, from its cgroup path."""

    container_id: str
    pod_uid: str | None = None
    runtime: str = "container"  # docker | containerd | cri-o | podman | container (unknown)

    @property
    def name(self) -> str:
        return f"pod_{self.pod_uid}" if self.pod_uid else self.container_id[:12]


def origin_of(proc_cgroup: str) -> Origin | None:
    """/proc/<pid>/cgroup text -> the container (and pod) the process belongs to; None for a host process."""
    for line in proc_cgroup.splitlines():
        path = line.split(":", 2)[-1]
        container = pod = None
        runtime = "container"
        for part in path.split("/"):
            if m := _POD.fullmatch(part):
                pod = m.group(1).replace("_", "-")
            elif m := _CONTAINER.fullmatch(part):
                container = m.group(2)
                runtime = _RUNTIMES.get(m.group(1) or "", runtime)
        if container:
            if runtime == "container" and "/docker/" in path:  # Docker's cgroupfs driver: /docker/<id>
                runtime = "docker"
            return Origin(container, pod, runtime)
    return None


@dataclass(frozen=True)
class Found:
    """One distinct /dev/shm and the processes that use it."""

    facts: Facts
    pid: int  # the process it is read through (/proc/<pid>/root/dev/shm)
    device: int  # st_dev of that /dev/shm
    origin: Origin | None  # None: the host's own


def _read(path: str) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def host_pid(proc: str = "/proc") -> int:
    """A process in the host's mount namespace: pid 1 in the host PID namespace (a DaemonSet with hostPID), this one
    where pid 1 cannot be read (this process already runs on the host, and the host does not let it look)."""
    try:
        os.stat(f"{proc}/1/root{SHM}")
        return 1
    except OSError:
        return os.getpid()


def usage(directory: str) -> tuple[int, int, int, int]:
    """(device, size, used, free) of a tmpfs, by statvfs (unlinked segments counted, which a listing misses)."""
    st, vfs = os.stat(directory), os.statvfs(directory)
    size = vfs.f_blocks * vfs.f_frsize
    return st.st_dev, size, size - vfs.f_bfree * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize


def oom_kills(proc_cgroup: str, sys_fs_cgroup: str) -> int | None:
    """OOM kills the kernel counted in the process's memory cgroup (v1 memory.oom_control, v2 memory.events)."""
    paths = cgroup.own_paths(proc_cgroup)
    v1 = os.path.join(sys_fs_cgroup, "memory")
    if os.path.isdir(v1):
        text, directory = "memory.oom_control", os.path.join(v1, paths.get("memory", "/").lstrip("/"))
    else:
        text, directory = "memory.events", os.path.join(sys_fs_cgroup, paths.get("", "/").lstrip("/"))
    for line in (_read(os.path.join(directory, text)) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def cgroup_root(pid: int, proc: str = "/proc") -> str:
    """The host's cgroup tree, as the host process `pid` sees it (a DaemonSet's own is its container's)."""
    path = f"{proc}/{pid}/root/sys/fs/cgroup"
    return path if os.path.isdir(path) else "/sys/fs/cgroup"


def host(proc: str = "/proc") -> Found:
    """The host's own /dev/shm, as the host's processes see it."""
    pid = host_pid(proc)
    return Found(
        _facts(pid, None, False, proc, cgroup_root(pid, proc)), pid, os.stat(f"{proc}/{pid}/root{SHM}").st_dev, None
    )


def _facts(pid: int, origin: Origin | None, shared: bool, proc: str, sys_fs_cgroup: str) -> Facts:
    base = f"{proc}/{pid}"
    unreadable = []
    size: int | None
    used: int | None
    free: int | None
    try:
        _, size, used, free = usage(f"{base}/root{SHM}")
    except OSError as e:
        size = used = free = None
        unreadable.append(f"/dev/shm usage (statvfs: {e.strerror})")
    try:
        ipc_host = os.stat(f"{base}/ns/ipc").st_ino == HOST_IPC_INODE
    except OSError as e:
        ipc_host = False
        unreadable.append(f"IPC namespace ({e.strerror})")
    runtime: Runtime = "none"
    if origin:
        runtime = (
            "kubernetes"
            if origin.pod_uid
            else "docker"
            if origin.runtime == "docker"
            else "podman"
            if origin.runtime == "podman"
            else "container"
        )
    try:
        mount = mountinfo.find(mountinfo.parse(_read(f"{base}/mountinfo") or ""), SHM)
    except UsageError as e:  # a line this parser does not know: a fact missing
        mount = None
        unreadable.append(f"mounts (/proc/{pid}/mountinfo: {e})")
    source, detail = mountinfo.shm_source(mount, in_container=origin is not None, ipc_host=ipc_host, runtime=runtime)
    text = _read(f"{base}/cgroup") or ""
    limit, working_set = cgroup.memory(sys_fs_cgroup, text) if origin else (None, None)
    flags: frozenset[Flag] = frozenset({"oom-killed"}) if origin and oom_kills(text, sys_fs_cgroup) else frozenset()
    read_only = mount is not None and "ro" in mount.options
    if origin is None:
        target, ipc = Target("local", "host"), Ipc("host")
    else:
        target = Target("container", origin.name, origin.container_id)
        ipc = Ipc("host" if ipc_host else "shareable" if shared else "private")
    return Facts(
        target=target,
        shm=Shm(True, size, used, free, source, detail, read_only=read_only),
        ipc=ipc,
        memory=Memory(limit, working_set),
        runtime=runtime,
        unreadable=tuple(unreadable),
        flags=flags,
    )


def scan(proc: str = "/proc") -> list[Found]:
    """One entry per distinct /dev/shm across mount namespaces: the host's first, then the containers', each read
    through the lowest pid of its mount namespace. Processes that vanish or cannot be read are passed over."""
    found = [host(proc)]
    host_device = found[0].device
    sys_fs_cgroup = cgroup_root(found[0].pid, proc)
    first_of_namespace: dict[int, int] = {}
    for pid in sorted(int(e) for e in os.listdir(proc) if e.isdigit()):
        try:
            first_of_namespace.setdefault(os.stat(f"{proc}/{pid}/ns/mnt").st_ino, pid)
        except OSError:  # gone, or not ours to read
            continue
    pids_of: dict[int, list[int]] = {}
    for pid in sorted(first_of_namespace.values()):
        try:
            device = os.stat(f"{proc}/{pid}/root{SHM}").st_dev
        except OSError:  # no /dev/shm there (--ipc=none), or the process is gone
            continue
        if device != host_device:  # the host's /dev/shm (--ipc=host, a bind of it) is the host's entry
            pids_of.setdefault(device, []).append(pid)

    for device, pids in pids_of.items():
        origins = [o for o in (origin_of(_read(f"{proc}/{p}/cgroup") or "") for p in pids) if o]
        if not origins:  # a mount namespace of the host's own (a service's private /dev/shm): not a container
            continue
        # Containers that share one /dev/shm outside a pod: --ipc=shareable and those that joined it
        shared = len({o.container_id for o in origins}) > 1 and not origins[0].pod_uid
        found.append(Found(_facts(pids[0], origins[0], shared, proc, sys_fs_cgroup), pids[0], device, origins[0]))
    return found
