"""A thread that samples /dev/shm about every millisecond (statvfs: the default sharing strategy unlinks its
segments at once, so only the filesystem's counters see them). It does nothing else: a walk of /proc beside it took
a core from the run it measures on a small machine (the run's pids come from its workers, isolate._worker_pids)."""

from __future__ import annotations

import os
import threading

from ..probe import cgroup
from ..probe.local import shm_usage

INTERVAL = 0.001


def oom_kills(sys_fs_cgroup: str = "/sys/fs/cgroup") -> int | None:
    """OOM kills so far in this process's memory cgroup (v1 memory.oom_control, v2 memory.events), None unknown."""
    try:
        with open("/proc/self/cgroup") as f:
            paths = cgroup.own_paths(f.read())
    except OSError:
        return None
    places = [
        (d, "memory.oom_control")
        for d in cgroup._candidates(os.path.join(sys_fs_cgroup, "memory"), paths.get("memory", "/"))
    ]
    places += [(d, "memory.events") for d in cgroup._candidates(sys_fs_cgroup, paths.get("", "/"))]
    for directory, name in places:
        try:
            with open(os.path.join(directory, name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def shm_used(path: str) -> int | None:
    """Bytes in use, or None where there is no /dev/shm to read."""
    try:
        return shm_usage(path)[1]
    except OSError:
        return None


class ShmSampler(threading.Thread):
    """Peak /dev/shm use while it runs."""

    def __init__(self, path: str, interval: float = INTERVAL):
        super().__init__(name="shm-sampler", daemon=True)
        self.path, self.interval = path, interval
        self.peak: int | None = None
        self.samples = 0
        self._stop_event = threading.Event()

    def _sample(self) -> None:
        used = shm_used(self.path)
        if used is not None:
            self.peak = used if self.peak is None else max(self.peak, used)
        self.samples += 1

    def run(self) -> None:
        self._sample()
        while not self._stop_event.wait(self.interval):
            self._sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self._sample()  # the last word, after the child is gone
