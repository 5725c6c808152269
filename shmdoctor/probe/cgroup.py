"""The memory cgroup's limit and usage, v1 and v2: /dev/shm pages are charged to it."""

from __future__ import annotations

import os

# v1 reports "no limit" as a page-aligned LONG_MAX; anything this large is no limit.
UNLIMITED = 2**62


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _number(text: str | None) -> int | None:
    if text is None or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= UNLIMITED else value


def own_paths(proc_cgroup: str) -> dict[str, str]:
    """/proc/self/cgroup -> {'memory': '/docker/abc', '': '/user.slice'} ('' is the v2 unified hierarchy)."""
    paths = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2]
    return paths


def _candidates(root: str, path: str) -> list[str]:
    # Inside a container the cgroup namespace (or Docker's mount) puts our cgroup at the root; on a host it lies
    # under the path. Try the deepest first, then each parent: the tightest limit on the way up counts.
    parts = [p for p in path.split("/") if p]
    return [os.path.join(root, *parts[:i]) for i in range(len(parts), -1, -1)]


def _working_set(directory: str, usage_file: str, inactive_key: str) -> int | None:
    """Usage less the inactive page cache, as the kubelet counts it: a dataset read from disk leaves cache that the
    kernel reclaims before it OOM-kills, so it does not take room from /dev/shm. Shared memory is never 'file'."""
    usage = _number(_read(os.path.join(directory, usage_file)))
    if usage is None:
        return None
    for line in (_read(os.path.join(directory, "memory.stat")) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == inactive_key and value.isdigit():
            return max(0, usage - int(value))
    return usage


def memory(sys_fs_cgroup: str = "/sys/fs/cgroup", proc_cgroup: str | None = None) -> tuple[int | None, int | None]:
    """(limit, working set) in bytes; limit None when nothing below the machine's memory limits it."""
    if proc_cgroup is None:
        proc_cgroup = _read("/proc/self/cgroup") or ""
    paths = own_paths(proc_cgroup)
    v1 = os.path.join(sys_fs_cgroup, "memory")
    if os.path.isdir(v1):
        limit_file, usage_file, inactive, root = (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_inactive_file",
            v1,
        )
        path = paths.get("memory", "/")
    else:
        limit_file, usage_file, inactive, root = "memory.max", "memory.current", "inactive_file", sys_fs_cgroup
        path = paths.get("", "/")
    limits, usage = [], None
    for d in _candidates(root, path):
        limit = _read(os.path.join(d, limit_file))
        if limit is None:
            continue
        limits.append(_number(limit))
        if usage is None:
            usage = _working_set(d, usage_file, inactive)
    return min((x for x in limits if x), default=None), usage


def cpus(sys_fs_cgroup: str = "/sys/fs/cgroup") -> float | None:
    """CPUs granted by a CFS quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us), else the affinity mask."""
    quota = None
    v2 = _read(os.path.join(sys_fs_cgroup, "cpu.max"))
    if v2 and not v2.startswith("max"):
        q, _, p = v2.partition(" ")
        quota = int(q) / int(p or 100000)
    else:
        quota_us = _number(_read(os.path.join(sys_fs_cgroup, "cpu", "cpu.cfs_quota_us")))
        period_us = _number(_read(os.path.join(sys_fs_cgroup, "cpu", "cpu.cfs_period_us")))
        if quota_us and quota_us > 0 and period_us:
            quota = quota_us / period_us
    affinity = len(os.sched_getaffinity(0))
    return min(quota, affinity) if quota else float(affinity)
