"""A thread that samples /dev/shm about every millisecond (statvfs: the default sharing strategy unlinks its
segments at once, so only the filesystem's counters see them) and notes the pids of a process tree."""
from __future__ import annotations

import os
import threading

import psutil

INTERVAL = 0.001
TREE_EVERY = 20  # samples between two looks at the process tree (psutil walks /proc: not every millisecond)


def shm_used(path: str) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return (st.f_blocks - st.f_bfree) * st.f_frsize


class ShmSampler(threading.Thread):
    """Peak /dev/shm use while it runs, and every pid seen under `root_pid` (to attribute segments left behind)."""

    def __init__(self, path: str, root_pid: int, interval: float = INTERVAL):
        super().__init__(name="shm-sampler", daemon=True)
        self.path, self.interval = path, interval
        self.root_pid = root_pid
        self.pids: set[int] = {root_pid}
        self.peak: int | None = None
        self.samples = 0
        self._stop_event = threading.Event()

    def _sample(self) -> None:
        used = shm_used(self.path)
        if used is not None:
            self.peak = used if self.peak is None else max(self.peak, used)
        if self.samples % TREE_EVERY == 0:
            self.pids |= tree(self.root_pid)
        self.samples += 1

    def run(self) -> None:
        self._sample()
        while not self._stop_event.wait(self.interval):
            self._sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self._sample()  # the last word, after the child is gone


def tree(pid: int) -> set[int]:
    try:
        return {pid} | {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()
