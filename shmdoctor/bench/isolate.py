"""Run one config in a child process and make sure it leaves nothing behind: no worker alive, no segment of its
processes in /dev/shm. A crash, a bus error or an OOM kill comes back as a result."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..errors import ProbeError
from ..model import SHM
from ..shm import removal as clean
from ..shm.segments import Entry, creator_pid, recognise
from .sampler import ShmSampler, oom_kills, shm_used
from .status import classify_end
from .zygote import Zygote

GRACE = 120  # seconds over the budget before a config is killed: the dataset's import, CUDA, the first batch
LOG_TAIL = 20_000
END_WAIT = 10  # seconds for the zygote to report a child whose process group was just killed


@dataclass(frozen=True)
class Outcome:
    status: str
    message: str
    measured: dict  # what the child emitted (empty when it died first)
    peak_shm_bytes: int | None
    leftover_shm_bytes: int | None
    removed_segments: tuple[str, ...]
    wall_seconds: float
    pids: frozenset[int] = frozenset()  # the child and every process seen under it


def _end_group(pgid: int, pids: set[int]) -> None:
    """SIGKILL what is left of the child's process group (its DataLoader workers) and wait until it is gone.

    Only that group: a pid seen earlier may belong to someone else by now, a process group id may not.
    """
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    others = []
    for pid in pids - {pgid}:  # the child itself is reaped by the zygote
        try:
            if os.getpgid(pid) != pgid:
                continue
        except OSError:
            continue
        try:
            os.waitpid(pid, 0)  # orphans come to us when we are PID 1 (in a container): reap them
        except ChildProcessError:
            others.append(pid)
    psutil.wait_procs([p for p in map(_process, others) if p], timeout=5)


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def _names(path: str) -> set[str]:
    try:
        return set(os.listdir(path))
    except OSError:
        return set()


def remove_segments(path: str, before: set[str], pids: set[int]) -> tuple[str, ...]:
    """Remove the PyTorch segments the dead child's processes left: names new since `before` (the listing taken as
    the config started) whose creator pid is one of theirs and dead. A pid number alone proves nothing when the
    directory is shared with other PID namespaces (--ipc=host, a bound /dev/shm): each one goes through clean's
    removal, under a lease the kernel refuses while anyone has the file open or mapped, inode checked."""
    try:
        files = clean.list_files(path)
    except ProbeError:
        return ()
    removed = []
    with clean.lease_breaks_ignored():
        for f in sorted(files, key=lambda f: f.name):
            creator, kind = creator_pid(f.name), recognise(f.name)
            if kind is None or f.name in before or creator not in pids or psutil.pid_exists(creator):
                continue
            if not isinstance(clean.remove(path, Entry(f.name, f.inode, f.bytes, kind)), str):  # str: why it stays
                removed.append(f.name)
    return tuple(removed)


def run(job: dict, *, timeout: float, zygote: Zygote, shm_charged: bool = True, shm_path: str = SHM) -> Outcome:
    """One config in a child forked by `zygote`, /dev/shm sampled meanwhile; then its process group ended, the
    segments its processes left removed and its files (in a folder of the zygote's) deleted, whatever the end was
    (Ctrl-C and SIGTERM included). shm_charged: the run's /dev/shm pages count toward a memory limit (an OOM kill
    then says /dev/shm; without a limit, or with no workers, it says memory)."""
    baseline, kills, before = shm_used(shm_path), oom_kills(), _names(shm_path)
    with tempfile.TemporaryDirectory(prefix="config-", dir=zygote.tmp) as tmp:
        job_path, result_path, log_path, pids_path, scratch = (
            os.path.join(tmp, n) for n in ("job.json", "result.json", "log.txt", "pids", "tmp")
        )
        os.mkdir(scratch)
        with open(job_path, "w") as f:
            json.dump({**job, "pids_file": pids_path}, f)
        started = time.perf_counter()
        pid = zygote.start(job_path, result_path, log_path, scratch)
        sampler = ShmSampler(shm_path)
        sampler.start()
        returncode = None
        try:
            returncode = zygote.wait(pid, timeout, stoppable=True)
        finally:
            wall, timed_out = time.perf_counter() - started, returncode is None
            measured = _read(result_path)
            pids = {pid} | _worker_pids(pids_path)
            _end_group(pid, pids)  # its workers; and the child itself when it ran past the timeout
            if returncode is None:  # bounded: a stop may have cut the zygote's line; close() then ends it all
                returncode = zygote.wait(pid, END_WAIT)
            sampler.stop()
            removed = remove_segments(shm_path, before, pids)
        log_text = Path(log_path).read_text(errors="replace")[-LOG_TAIL:] if os.path.exists(log_path) else ""
    status, message = classify_end(
        measured.get("error", ""),
        log_text,
        returncode,
        shm_present=os.path.isdir(shm_path),
        timed_out=timed_out,
        oom_killed=kills is not None and (oom_kills() or 0) > kills,
        shm_charged=shm_charged,
    )
    after = shm_used(shm_path)
    return Outcome(
        status=status,
        message=message,
        measured=measured,
        peak_shm_bytes=None if baseline is None or sampler.peak is None else max(0, sampler.peak - baseline),
        leftover_shm_bytes=None if baseline is None or after is None else max(0, after - baseline),
        removed_segments=removed,
        wall_seconds=wall,
        pids=frozenset(pids),
    )


def _worker_pids(path: str) -> set[int]:
    """The pids the workers wrote as they started (child._gate): seen even when they die at once."""
    try:
        with open(path) as f:
            return {int(line) for line in f if line.strip().isdigit()}
    except OSError:
        return set()


def _read(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
