"""A zygote: one process that imports torch once and forks a fresh child for each config.

Each config still runs in a process of its own (its own session and process group, its own log, killable, its death
a result), but without paying for an interpreter and `import torch` each time: seconds a config on a GPU machine,
more than the measurement itself. The zygote never touches CUDA, so each child initialises its own.

Protocol, one line each way: the zygote says `ready` once torch is imported; then for each job the parent writes
`{"job": PATH, "result": PATH, "log": PATH, "tmp": DIR}` and the zygote answers `started PID`, then `ended PID CODE`
(CODE as subprocess reports it: negative for a signal). The parent never imports torch: its first job asks a child
for the versions, the devices and a --dataset's batch (child.facts).
Each child's temporary files (multiprocessing's `pymp-*` folder of each worker, which a killed worker cannot remove)
go under DIR, which the parent removes after the config. SIGTERM to the zygote, or its parent's death, ends the
child it runs, with its workers, and the zygote.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from ..errors import ProbeError
from .prctl import on_parent_death
from .stop import pending

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
START_TIMEOUT = 300  # seconds for the zygote's `import torch` on a cold disk
POLL = 0.2  # seconds between two looks for a swallowed stop while waiting
END_TIMEOUT = 5  # seconds for the zygote to end its child and itself once told to


class ZygoteDied(ProbeError):
    """The zygote is gone (killed, or torch failed to import there): the sweep cannot go on. Exit 3."""


class Zygote:
    """The parent's handle: start() a config's child, wait() for its end. A dead zygote is replaced on next start."""

    def __init__(self, tmp: str) -> None:
        self.proc: subprocess.Popen | None = None
        self.tmp = tmp  # the zygote's TMPDIR: nothing of the run is written to the machine's /tmp
        self._buffer = b""
        self.ready_at: float | None = None  # time.time() when the zygote said torch was imported

    def _spawn(self) -> subprocess.Popen:
        env = {
            **os.environ,
            "TMPDIR": self.tmp,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
        }
        self._buffer = b""
        self.ready_at = None
        return subprocess.Popen(
            [sys.executable, "-m", "shmdoctor.bench.zygote", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The zygote's stdin and stdout: both pipes, from _spawn."""
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def _line(self, timeout: float | None, stoppable: bool = False) -> str | None:
        """The zygote's next line; None on timeout; ZygoteDied when it is gone. stoppable: a stop that was signalled
        but swallowed on its way (bench.stop.pending) is raised while waiting."""
        fd = self._pipes()[1].fileno()
        end = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            if stoppable:
                pending()
            left = POLL if end is None else min(POLL, end - time.monotonic())
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                if end is not None and time.monotonic() >= end:
                    return None
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise ZygoteDied("the bench's zygote process ended")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def ready(self) -> float:
        """Waits until the zygote has imported torch; when that was (time.time())."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._spawn()
        if self.ready_at is None:
            line = self._line(START_TIMEOUT, stoppable=True)
            if line != "ready":
                raise ZygoteDied(f"the bench's zygote did not get ready: {line!r}")
            self.ready_at = time.time()
        return self.ready_at

    def start(self, job: str, result: str, log: str, tmp: str) -> int:
        self.ready()
        stdin = self._pipes()[0]
        stdin.write((json.dumps({"job": job, "result": result, "log": log, "tmp": tmp}) + "\n").encode())
        stdin.flush()
        line = self._line(START_TIMEOUT, stoppable=True)
        if not line or not line.startswith("started "):
            raise ZygoteDied(f"the bench's zygote did not start a run: {line!r}")
        return int(line.split()[1])

    def wait(self, pid: int, timeout: float | None, stoppable: bool = False) -> int | None:
        """The child's exit code (negative: the signal that ended it), or None when `timeout` passed first."""
        line = self._line(timeout, stoppable)
        if line is None:
            return None
        _, ended, code = line.split()
        assert int(ended) == pid, line
        return int(code)

    def close(self) -> None:
        """End the zygote and whatever child it still runs (a sweep stopped between start() and wait())."""
        if self.proc is not None:
            stdin, stdout = self._pipes()
            stdin.close()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=END_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            stdout.close()
            self.proc = None

    def __enter__(self) -> Zygote:
        self.proc = self._spawn()  # its `import torch` runs while the parent gets ready
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _child(request: dict) -> None:
    """In the forked child: a session of its own, first in line for the OOM killer (its workers inherit that, so a
    memory limit kills the run, not the bench), the log as stdout and stderr, then the config."""
    os.setsid()
    on_parent_death(signal.SIGKILL)  # the zygote killed outright: the config goes too (its workers follow it)
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.environ["TMPDIR"] = tempfile.tempdir = request["tmp"]
    import multiprocessing

    multiprocessing.current_process()._config.pop("tempdir", None)  # type: ignore[attr-defined]  # pymp-* folders: under the config's own
    from .child import main

    main([request["job"], request["result"]])  # ends the process


def serve(parent: int) -> None:
    running = [0]

    def end(signum: int, frame: object) -> None:
        """SIGTERM (the parent's close, or its death): the child's session and the child, then the zygote."""
        if running[0]:
            for kill in (os.killpg, os.kill):  # the child's group once it made one; the child before that
                with contextlib.suppress(OSError):
                    kill(running[0], signal.SIGKILL)
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's Ctrl-C is the parent's to handle
    on_parent_death(signal.SIGTERM)
    if os.getppid() != parent:  # it died before that
        end(signal.SIGTERM, None)
    import torch  # noqa: F401  (the point of the zygote: imported once, inherited by every child)
    import torch.utils.data  # noqa: F401

    from . import child  # noqa: F401

    print("ready", flush=True)
    for raw in sys.stdin:
        request = json.loads(raw)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # no end() between the fork and running[0]
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                _child(request)
            finally:
                os._exit(70)
        running[0] = pid
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        print(f"started {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        running[0] = 0
        print(f"ended {pid} {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
