"""Run one config in a child process and make sure it leaves nothing behind: no worker alive, no segment of its
processes in /dev/shm. A crash, a bus error or an OOM kill comes back as a result."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from .sampler import ShmSampler, shm_used
from .status import classify

SHM = "/dev/shm"
GRACE = 120  # seconds over the budget before a config is killed: interpreter, torch import, worker shutdown
LOG_TAIL = 20_000
SEGMENT = re.compile(r"^torch_(\d+)_")  # PyTorch's names: torch_<pid of the creating process>_<random>_<n>
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


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
    for pid in pids - {pgid}:  # the child itself is reaped by its Popen
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


def remove_segments(path: str, pids: set[int]) -> tuple[str, ...]:
    """Unlink torch_<pid>_* files whose pid is one of the dead child's processes, and only those."""
    removed = []
    try:
        names = os.listdir(path)
    except OSError:
        return ()
    for name in sorted(names):
        m = SEGMENT.match(name)
        if m and int(m.group(1)) in pids and not psutil.pid_exists(int(m.group(1))):
            try:
                os.unlink(os.path.join(path, name))
                removed.append(name)
            except OSError:
                pass
    return tuple(removed)


def run(job: dict, *, timeout: float, shm_path: str = SHM) -> Outcome:
    baseline = shm_used(shm_path)
    with tempfile.TemporaryDirectory(prefix="shmdoctor-bench-") as tmp:
        job_path, result_path, log_path = (os.path.join(tmp, n) for n in ("job.json", "result.json", "log.txt"))
        with open(job_path, "w") as f:
            json.dump(job, f)
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))}
        timed_out = False
        with open(log_path, "wb") as log:
            started = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "shmdoctor.bench.runner", job_path, result_path],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
            sampler = ShmSampler(shm_path, proc.pid)
            sampler.start()
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:  # Ctrl-C too: the child has its own session, so no one else ends it
                wall = time.perf_counter() - started
                measured = _read(result_path)
                pids = sampler.pids | set(measured.get("worker_pids", ()))
                _end_group(proc.pid, pids)
                returncode = proc.wait()
                sampler.stop()
                removed = remove_segments(shm_path, pids)
        log_text = Path(log_path).read_text(errors="replace")[-LOG_TAIL:]
    status, message = classify(measured.get("error", ""), log_text, returncode,
                               shm_present=os.path.isdir(shm_path), timed_out=timed_out)
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


def _read(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
