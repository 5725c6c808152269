"""A command run as a transparent child: stdin and stdout are its own (inherited); stderr is too where ours is a
terminal (colours and progress bars as without us: the instrumented child's Python processes copy what they write
there for the diagnosis), else it goes through a pipe that is copied to ours as it comes (unbuffered: a progress bar
still redraws) and kept in a ring; signals sent to us are forwarded to it; its exit status comes back as a shell
reports it (128+N for a signal), and a death by a signal of the forwarded set is ours too (reraise).

It dies with us: killed whatever way we die (SIGKILL, a signal we do not forward), it gets SIGKILL from the kernel
(PR_SET_PDEATHSIG), as the command under `env` would have died with it. A file without `#!` is run by /bin/sh, as
execvp does (posix_spawnp no longer does).

Signals: the forwarded ones are blocked in every thread of ours and taken with sigtimedwait, so nothing of ours dies
of them. The child has a process group of its own, as under tini: a signal to us, or to our group, reaches it once,
through us. At a terminal we do what a shell does for a job: the child's group gets the terminal's foreground when
ours had it, so Ctrl-C (the terminal signals its foreground group) and reading the terminal are the child's alone;
when it stops for job control (Ctrl-Z, or the terminal while in the background) we stop the same way, so that the
shell sees the job stopped, and once continued (fg, bg) we continue it, with the terminal when it is ours.

As PID 1 (a container's entrypoint) we also reap the orphans the kernel hands us. After the child exits, what it left
behind may still write to its stderr: a copy of ours keeps reading it to the end, so nothing dies of SIGPIPE."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ShmDoctorError
from ..exits import ExitCode
from .ring import Ring

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
DRAIN_S = 2.0  # after the child exits, how long its stderr may stay open (workers it left behind hold it)
POLL_S = 0.5  # the child's exit is also polled this often: a SIGCHLD taken by a thread not ours is never a hang


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
    signal: int | None = None  # the signal it died of

    @property
    def ours(self) -> int | None:
        """The signal we die of in turn: one of the forwarded set (Ctrl-C's SIGINT from the terminal too, which
        reached it directly), as the shell that started us would have seen it kill the command under `env`."""
        return self.signal if self.signal in FORWARDED else None


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
SHELL = "/bin/sh"  # execvp's fallback for a file the kernel cannot execute (ENOEXEC)


def _exec(path: str, argv: list[str], env) -> None:
    """execve, and for a file without #! (ENOEXEC) /bin/sh running it, as execvp does."""
    try:
        os.execve(path, argv, env)
    except OSError as e:
        if e.errno != errno.ENOEXEC:
            raise
    os.execve(SHELL, [SHELL, path, *argv[1:]], env)


def _spawn(argv: list[str], env, stderr: tuple[int, int] | None) -> int:
    """fork and exec argv[0] as found on our PATH: the child in a process group of its own, our blocked signals
    unblocked, SIGPIPE and SIGXFSZ at their default (Python ignores them); PR_SET_PDEATHSIG so that it dies with us;
    stderr (write end, read end) the pipe's write end. Only os calls in the child (a fork of a process that may have
    threads); an exec that fails comes back through a pipe as CommandError."""
    path = resolve(argv[0])
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    parent = os.getpid()
    report_r, report_w = os.pipe()  # close-on-exec: EOF once the exec succeeded
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_r)
            os.setpgid(0, 0)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # we died before it was set: nothing will ever send it
                os.kill(os.getpid(), signal.SIGKILL)
            if stderr is not None:
                os.dup2(stderr[0], 2)
                os.close(stderr[1])
            for sig in (*FORWARDED, signal.SIGPIPE, signal.SIGXFSZ):  # exec keeps an ignored signal ignored
                if sig in (signal.SIGPIPE, signal.SIGXFSZ) or signal.getsignal(sig) != signal.SIG_IGN:
                    signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, ())
            _exec(path, argv, env)
        except OSError as e:
            os.write(report_w, str(e.errno).encode())
        finally:
            os._exit(127)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as report:
        failed = report.read()
    if failed:
        os.waitpid(pid, 0)
        err = int(failed)
        raise CommandError(argv[0], OSError(err, os.strerror(err)))
    return pid


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


def _terminal() -> int | None:
    """Our controlling terminal, open (None without one)."""
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None


def _foreground(tty: int) -> int | None:
    try:
        return os.tcgetpgrp(tty)
    except OSError:
        return None


def _give_terminal(tty: int, group: int) -> None:
    """Make group the terminal's foreground, from the background too (SIGTTOU blocked: it would stop us)."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTTOU})
    try:
        os.tcsetpgrp(tty, group)
    except OSError:  # the group is gone, or the terminal
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _resume(tty: int, pid: int) -> None:
    """The child continued, with the terminal's foreground when its group or ours has it (not a shell's, another
    job's)."""
    if _foreground(tty) in (os.getpgrp(), pid):
        _give_terminal(tty, pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGCONT)


def _stopped(tty: int, pid: int, signum: int) -> None:
    """The child stopped. Reading or writing the terminal before its group was given it (a race at the start, or
    after `fg` gave it to ours): given it, and continued. Ctrl-Z, or the terminal while the job is in the
    background: we stop the same way, and continue it when we are continued (an orphaned group, with no shell to
    continue us, is not stopped: we go on at once). A SIGSTOP is its sender's to undo."""
    if signum in (signal.SIGTTIN, signal.SIGTTOU) and _foreground(tty) in (os.getpgrp(), pid):
        _resume(tty, pid)
    elif signum in (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        if _foreground(tty) == pid:
            _give_terminal(tty, os.getpgrp())
        os.kill(os.getpid(), signum)  # we stop here until continued
        _resume(tty, pid)


def _reap(pid: int) -> int | None:
    """The child's wait status once it exited or stopped, else None; as PID 1, every exited orphan is reaped on the
    way."""
    done, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
    found = status if done == pid else None
    while os.getpid() == 1:
        try:
            done, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if done == 0:
            break
        if done == pid:
            found = status
    return found


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
    argv: list[str],
    ring: Ring,
    on_spawn: Callable[[int], None] | None = None,
    env: dict[str, str] | None = None,
    tee: bool = True,
) -> Ended:
    """Start argv (in env, else ours), tee its stderr into ring (tee=False: ours is its own, the ring stays empty),
    forward signals until it exits. Call from the main thread (the child dies with the thread that started it)
    before any other thread of ours; start them in on_spawn (called with its pid once the child runs), so they
    inherit the blocked signals."""
    watched = set(FORWARDED) | {signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    read_fd, write_fd = os.pipe() if tee else (-1, -1)
    tty = _terminal()
    try:
        try:
            pid = _spawn(argv, os.environ if env is None else env, (write_fd, read_fd) if tee else None)
        finally:
            if tee:
                os.close(write_fd)
        start = time.monotonic()
        if tty is not None and _foreground(tty) == os.getpgrp():
            _give_terminal(tty, pid)
        drained = threading.Event()
        if tee:
            threading.Thread(target=_tee, args=(read_fd, ring, drained), name="stderr-tee", daemon=True).start()
        else:
            drained.set()
        if on_spawn is not None:
            on_spawn(pid)
        forwarded = []
        while True:
            info = signal.sigtimedwait(watched, POLL_S)
            if info is None or info.si_signo == signal.SIGCHLD:
                status = _reap(pid)
                if status is None:
                    continue
                if not os.WIFSTOPPED(status):
                    break
                if tty is not None:  # job control is the terminal's: elsewhere a stop is its sender's to undo
                    _stopped(tty, pid, os.WSTOPSIG(status))
                continue
            forwarded.append(info.si_signo)
            with contextlib.suppress(ProcessLookupError):  # it is exiting: its SIGCHLD comes next
                os.kill(pid, info.si_signo)
        if tty is not None and _foreground(tty) == pid:  # the terminal back to us, to print (TOSTOP)
            _give_terminal(tty, os.getpgrp())
        elapsed = time.monotonic() - start
        if not drained.wait(DRAIN_S):
            _keep_draining(read_fd)
        code = os.waitstatus_to_exitcode(status)
        return Ended(128 - code if code < 0 else code, elapsed, tuple(forwarded), pid, -code if code < 0 else None)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if tty is not None:
            os.close(tty)
        # read_fd is closed with the process; the tee thread (a daemon) may still hold it when workers linger


def reraise(ended: Ended) -> None:
    """Die of the signal the child died of where it is ours to die of (Ended.ours), so that a shell loop around us
    stops at Ctrl-C as it does around the command alone; the shell still sees 128+N. Returns where that cannot be:
    as PID 1 (the kernel ignores a signal its init has no handler for), or not ours; the caller exits 128+N."""
    signum = ended.ours
    if signum is None or os.getpid() == 1:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if signum == signal.SIGQUIT:  # its default is a core dump: of shmdoctor's Python, of no use to anyone
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})  # delivered here, now
