"""A command run as a transparent child: stdin and stdout are its own (inherited), stderr goes through a pipe that is
copied to ours as it comes (unbuffered: a progress bar still redraws) and kept in a ring; signals sent to us are
forwarded to it; its exit status comes back as a shell reports it (128+N for a signal).

Signals: the forwarded ones are blocked in every thread of ours and taken with sigwaitinfo, so nothing of ours dies
of them. One sent by a process (kill, `docker stop`, a scheduler: si_code <= 0) is forwarded. One the kernel sent
(Ctrl-C at a terminal: SI_KERNEL) is not: the child is in our process group and got it too, once."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ShmDoctorError
from ..exits import ExitCode
from .ring import Ring

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
SI_KERNEL = 0x80
DRAIN_S = 2.0  # after the child exits, how long its stderr may stay open (workers it left behind hold it)


class CommandError(ShmDoctorError):
    """The command could not be started: 127 when not found, 126 when not executable (as a shell says)."""

    def __init__(self, command: str, e: OSError):
        super().__init__(f"cannot run {command!r}: {e.strerror}")
        self.exit_code = ExitCode.COMMAND_NOT_FOUND if e.errno == errno.ENOENT else ExitCode.COMMAND_NOT_EXECUTABLE


def resolve(command: str) -> str:
    """The program posix_spawnp would run, or CommandError before anything is printed or started."""
    path = command if "/" in command else shutil.which(command)
    if path is None:
        raise CommandError(command, FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)))
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        err = errno.ENOENT if not os.path.exists(path) else errno.EACCES
        raise CommandError(command, OSError(err, os.strerror(err)))
    return path


@dataclass(frozen=True)
class Ended:
    code: int  # exit code; 128+N when killed by signal N
    elapsed: float
    forwarded: tuple[int, ...]  # signals we passed on


def _tee(read_fd: int, ring: Ring, done: threading.Event) -> None:
    out_ok = True
    while True:
        try:
            data = os.read(read_fd, 65536)
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            break
        if not data:
            break
        ring.append(data)
        while out_ok and data:
            try:
                data = data[os.write(2, data) :]
            except OSError as e:  # our stderr is gone: keep draining the child's, so it never blocks on it
                out_ok = e.errno == errno.EINTR
    done.set()


def run(
    argv: list[str], ring: Ring, on_spawn: Callable[[], None] | None = None, env: dict[str, str] | None = None
) -> Ended:
    """Start argv (in env, else ours), tee its stderr into ring, forward signals until it exits. Call from the main
    thread before any other thread of ours; start them in on_spawn (called once the child runs), so they inherit the
    blocked signals."""
    watched = set(FORWARDED) | {signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    read_fd, write_fd = os.pipe()
    try:
        try:
            pid = os.posix_spawnp(
                argv[0],
                argv,
                os.environ if env is None else env,
                file_actions=[(os.POSIX_SPAWN_DUP2, write_fd, 2), (os.POSIX_SPAWN_CLOSE, read_fd)],
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # Python ignores them; a program expects their default
            )
        except OSError as e:  # gone since resolve()
            raise CommandError(argv[0], e) from None
        finally:
            os.close(write_fd)
        start = time.monotonic()
        drained = threading.Event()
        threading.Thread(target=_tee, args=(read_fd, ring, drained), name="stderr-tee", daemon=True).start()
        if on_spawn is not None:
            on_spawn()
        forwarded = []
        while True:
            info = signal.sigwaitinfo(watched)
            if info.si_signo == signal.SIGCHLD:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == pid:
                    break
                continue
            if info.si_code != SI_KERNEL:
                forwarded.append(info.si_signo)
                with contextlib.suppress(ProcessLookupError):  # it is exiting: its SIGCHLD comes next
                    os.kill(pid, info.si_signo)
        elapsed = time.monotonic() - start
        drained.wait(DRAIN_S)
        code = os.waitstatus_to_exitcode(status)
        return Ended(128 - code if code < 0 else code, elapsed, tuple(forwarded))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        # read_fd is closed with the process; the tee thread (a daemon) may still hold it when workers linger
