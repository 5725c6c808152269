"""A command run as a transparent child: stdin and stdout are its own (inherited), stderr goes through a pipe that is
copied to ours as it comes (unbuffered: a progress bar still redraws) and kept in a ring; signals sent to us are
forwarded to it; its exit status comes back as a shell reports it (128+N for a signal).

Signals: the forwarded ones are blocked in every thread of ours and taken with sigtimedwait, so nothing of ours dies
of them. Away from a terminal (a container, a scheduler, CI, PID 1) the child has a process group of its own, as
under tini: a signal to us, or to our group, reaches it once, through us. In the foreground of a terminal it stays
in ours, so that Ctrl-C, Ctrl-Z and reading the terminal work as without us: there one the kernel sent (Ctrl-C:
SI_KERNEL) is not forwarded, the child got it too; one sent by a process is.

As PID 1 (a container's entrypoint) we also reap the orphans the kernel hands us. After the child exits, what it left
behind may still write to its stderr: a copy of ours keeps reading it to the end, so nothing dies of SIGPIPE."""

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
from typing import Any

from ..errors import ShmDoctorError
from ..exits import ExitCode
from .ring import Ring

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
SI_KERNEL = 0x80
DRAIN_S = 2.0  # after the child exits, how long its stderr may stay open (workers it left behind hold it)
POLL_S = 1.0  # the child's exit is also polled this often: a SIGCHLD taken by a thread not ours is never a hang


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
    pid: int = 0


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


def _foreground() -> bool:
    """Whether our process group is the foreground of our controlling terminal."""
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:  # no controlling terminal
        return False
    try:
        return os.tcgetpgrp(tty) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(tty)


def _reap(pid: int) -> int | None:
    """The child's wait status once it exited, else None; as PID 1, every exited orphan is reaped on the way."""
    if os.getpid() != 1:
        done, status = os.waitpid(pid, os.WNOHANG)
        return status if done == pid else None
    found = None
    while True:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if done == 0:
            return found
        if done == pid:
            found = status


def _keep_draining(read_fd: int) -> None:
    """A process of its own that copies what the child's leftovers still write to our stderr, until the last of
    them closes it: once we exit, nothing else would read the pipe, and their next write would be a SIGPIPE."""
    if os.fork():
        return
    try:  # only os calls here: a fork of a process with threads
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.closerange(3, read_fd)
        os.closerange(read_fd + 1, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 1024)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)  # a reader of our stdout is not kept waiting by this copy
        out_ok = True
        while data := os.read(read_fd, 65536):
            while out_ok and data:
                try:
                    data = data[os.write(2, data) :]
                except OSError as e:
                    out_ok = e.errno == errno.EINTR
    finally:
        os._exit(0)


def run(
    argv: list[str], ring: Ring, on_spawn: Callable[[int], None] | None = None, env: dict[str, str] | None = None
) -> Ended:
    """Start argv (in env, else ours), tee its stderr into ring, forward signals until it exits. Call from the main
    thread before any other thread of ours; start them in on_spawn (called with its pid once the child runs), so
    they inherit the blocked signals."""
    watched = set(FORWARDED) | {signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    read_fd, write_fd = os.pipe()
    shared_group = _foreground()
    group: dict[str, Any] = {} if shared_group else {"setpgroup": 0}  # away from a terminal: a group of its own
    try:
        try:
            pid = os.posix_spawnp(
                argv[0],
                argv,
                os.environ if env is None else env,
                file_actions=[(os.POSIX_SPAWN_DUP2, write_fd, 2), (os.POSIX_SPAWN_CLOSE, read_fd)],
                setsigmask=(),
                setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),  # Python ignores them; a program expects their default
                **group,
            )
        except OSError as e:  # gone since resolve()
            raise CommandError(argv[0], e) from None
        finally:
            os.close(write_fd)
        start = time.monotonic()
        drained = threading.Event()
        threading.Thread(target=_tee, args=(read_fd, ring, drained), name="stderr-tee", daemon=True).start()
        if on_spawn is not None:
            on_spawn(pid)
        forwarded = []
        while True:
            info = signal.sigtimedwait(watched, POLL_S)
            if info is None or info.si_signo == signal.SIGCHLD:
                status = _reap(pid)
                if status is not None:
                    break
                continue
            if not shared_group or info.si_code != SI_KERNEL:
                forwarded.append(info.si_signo)
                with contextlib.suppress(ProcessLookupError):  # it is exiting: its SIGCHLD comes next
                    os.kill(pid, info.si_signo)
        elapsed = time.monotonic() - start
        if not drained.wait(DRAIN_S):
            _keep_draining(read_fd)
        code = os.waitstatus_to_exitcode(status)
        return Ended(128 - code if code < 0 else code, elapsed, tuple(forwarded), pid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        # read_fd is closed with the process; the tee thread (a daemon) may still hold it when workers linger
