"""A zygote: one process that imports torch once and forks a fresh child for each config.

Each config still runs in a process of its own (its own session and process group, its own log, killable, its death
a result), but without paying for an interpreter and `import torch` each time: seconds a config on a GPU machine,
more than the measurement itself. The zygote never touches CUDA, so each child initialises its own.

Protocol, one line each way: the parent writes `{"job": PATH, "result": PATH, "log": PATH}`; the zygote answers
`started PID`, then `ended PID CODE` (CODE as subprocess reports it: negative for a signal).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import IO

from ..errors import ProbeError

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
START_TIMEOUT = 300  # seconds for the zygote's `import torch` on a cold disk


class ZygoteDied(ProbeError):
    """The zygote is gone (killed, or torch failed to import there): the sweep cannot go on. Exit 3."""


class Zygote:
    """The parent's handle: start() a config's child, wait() for its end. A dead zygote is replaced on next start."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self._buffer = b""

    def _spawn(self) -> subprocess.Popen:
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")])),
        }
        self._buffer = b""
        return subprocess.Popen(
            [sys.executable, "-m", "shmdoctor.bench.zygote"],
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

    def _line(self, timeout: float | None) -> str | None:
        """The zygote's next line; None on timeout; ZygoteDied when it is gone."""
        fd = self._pipes()[1].fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise ZygoteDied("the bench's zygote process ended")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def start(self, job: str, result: str, log: str) -> int:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._spawn()
        stdin = self._pipes()[0]
        stdin.write((json.dumps({"job": job, "result": result, "log": log}) + "\n").encode())
        stdin.flush()
        line = self._line(START_TIMEOUT)
        if not line or not line.startswith("started "):
            raise ZygoteDied(f"the bench's zygote did not start a run: {line!r}")
        return int(line.split()[1])

    def wait(self, pid: int, timeout: float | None) -> int | None:
        """The child's exit code (negative: the signal that ended it), or None when `timeout` passed first."""
        line = self._line(timeout)
        if line is None:
            return None
        _, ended, code = line.split()
        assert int(ended) == pid, line
        return int(code)

    def close(self) -> None:
        if self.proc is not None:
            stdin, stdout = self._pipes()
            stdin.close()  # the zygote ends at the end of its input
            try:
                self.proc.wait(timeout=10)
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
    from .runner import main

    main([request["job"], request["result"]])  # ends the process


def serve() -> None:
    import torch  # noqa: F401  (the point of the zygote: imported once, inherited by every child)
    import torch.utils.data  # noqa: F401

    from . import runner  # noqa: F401

    for raw in sys.stdin:
        request = json.loads(raw)
        pid = os.fork()
        if pid == 0:
            try:
                _child(request)
            finally:
                os._exit(70)
        print(f"started {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"ended {pid} {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    serve()
