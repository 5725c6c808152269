"""Removing leaked segments safely: list the directory, judge each known segment (segments.plan_removal), confirm
with the kernel that nobody holds it (a write lease), unlink it under that lease. clean() is `shmdoctor clean`; bench
removes what a dead config left through remove()."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import signal
import stat
from collections.abc import Iterator
from typing import ClassVar

from ..errors import ProbeError, UsageError
from ..exits import ExitCode
from ..model import SHM
from ..probe import holders as holders_probe
from ..probe import local, mountinfo
from ..probe.holders import Holders
from .segments import PATTERNS, Entry, File, Plan, creator_pid, plan_removal, recognise

HOST_PID_NAMESPACE = 4026531836  # PROC_PID_INIT_INO: /proc shows every process of the machine
GONE = "gone already"
# Where --exclusive is refused: a /dev/shm the host and its --ipc=host containers share (local.probe's sources).
SHARED_WITH_THE_HOST = {
    "system": "{d} is this machine's own (not a container's)",
    "host-ipc": "this container shares the host's IPC namespace (--ipc=host), and with it the host's {d}",
    "host": "{d} is the host's /dev/shm, bound in (-v /dev/shm:/dev/shm)",
}


@dataclasses.dataclass(frozen=True)
class Cleaned:
    """clean's document: what is leaked, what went, what stays and why."""

    kind: ClassVar[str] = "clean"
    directory: str
    size_bytes: int
    used_bytes: int
    plan: Plan
    yes: bool  # removal asked for; without it nothing changed
    exclusive: bool  # the user said no other container shares the directory
    removed: tuple[Entry, ...] = ()
    failed: tuple[tuple[Entry, str], ...] = ()  # leaked, and why it could not be removed
    unreadable: tuple[str, ...] = ()  # processes whose holds could not be read
    interrupted: bool = False

    @property
    def freed_bytes(self) -> int:
        return sum(e.bytes for e in self.removed)

    @property
    def exit_code(self) -> ExitCode:
        if self.interrupted:
            return ExitCode.INTERRUPTED
        return ExitCode.FINDING if self.failed else ExitCode.OK


def list_files(directory: str) -> list[File]:
    try:
        entries = list(os.scandir(directory))
    except OSError as e:
        raise ProbeError(f"cannot list {directory}: {e.strerror}") from None
    files = []
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            files.append(File(entry.name, st.st_ino, st.st_blocks * 512, st.st_nlink))
    return files


def unheld(directory: str, *, creators_visible_here: bool, proc: str = "/proc") -> tuple[Plan, Holders]:
    """The known segments of directory that no live process holds, as /proc shows it: what clean confirms under
    leases before it removes anything, and the exporter's leaked bytes (read-only: nothing is opened). /proc is
    scanned only when there is a known segment to look for."""
    return unheld_of(list_files(directory), directory, creators_visible_here=creators_visible_here, proc=proc)


def unheld_of(
    files: list[File], directory: str, *, creators_visible_here: bool, proc: str = "/proc"
) -> tuple[Plan, Holders]:
    if not any(recognise(f.name) for f in files):
        return plan_removal(files, Holders(())), Holders(())
    held = holders_probe.scan(directory, proc, namespaces=True)
    return plan_removal(files, held, creators_visible=creators_visible_here), held


def left_behind(directory: str, before: set[int], job: set[int]) -> Plan:
    """The known segments that appeared in directory while a job ran and that no live process holds once it ended:
    what its dead left there. A creator's pid is checked where creators are visible (the host's PID namespace);
    elsewhere only the job's own processes (run's PID namespace, its child's pids) count as creators."""
    files = [f for f in list_files(directory) if f.inode not in before]
    plan, _ = unheld_of(files, directory, creators_visible_here=True)
    if creators_visible():
        return plan
    return dataclasses.replace(plan, leaked=tuple(e for e in plan.leaked if creator_pid(e.name) in job))


CLEAN_NAMES = 8  # leftovers named on the clean command line where clean can tell them itself


def clean_command(directory: str, names: list[str]) -> str:
    """The `shmdoctor clean` that removes these leftovers. Outside the host's PID namespace clean keeps a PyTorch
    segment whose creator it cannot check, unless --exclusive, with the names keeping it to exactly these (run
    checked their creators: its job's own); where the directory is the host's, only the host's PID namespace can."""
    command = ["shmdoctor", "clean", "--yes"] + (["--path", directory] if directory != SHM else [])
    if creators_visible():
        return " ".join(command + (names if len(names) <= CLEAN_NAMES else []))
    if shared_with_the_host(directory):
        return " ".join(command + names) + "  # on the host, or in a container started with --pid=host"
    return " ".join(command + ["--exclusive", *names])


def creators_visible() -> bool:
    """Whether the pid in a segment's name can be checked: only from the host's PID namespace, where /proc shows
    every process of the machine. In any other, peers of other PID namespaces may share the directory without a
    trace visible here (--ipc=shareable and --ipc=container:X share /dev/shm, a volume shares a tmpfs), and their
    file_system segments in flight are mapped by nobody: only their creator's pid tells they are in use."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino == HOST_PID_NAMESPACE
    except OSError:
        return False


def tmpfs_mount_point(directory: str) -> bool:
    try:
        with open("/proc/self/mountinfo") as f:
            mount = mountinfo.find(mountinfo.parse(f.read()), os.path.realpath(directory))
    except (OSError, UsageError):
        return False
    return mount is not None and mount.fstype == "tmpfs"


def shared_with_the_host(directory: str) -> str | None:
    """Why the directory is the host's /dev/shm (so processes of other PID namespaces may use it), or None."""
    why = SHARED_WITH_THE_HOST.get(local.probe(directory).shm.source)
    return why.format(d=directory) if why else None


class Kept(Exception):
    """Why a segment stays; held: the kernel says a process has it open or mapped."""

    def __init__(self, why: str, held: bool = False):
        super().__init__(why)
        self.held = held


def _lease(fd: int, owner: int) -> None:
    """A write lease on fd. The kernel grants leases to the file's owner, or to CAP_LEASE, which a container's root
    lacks (Docker drops it): root then takes the lease as the owner, for that one call."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except PermissionError:
        if os.geteuid() != 0 or owner == 0:
            raise
        os.seteuid(owner)
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        finally:
            os.seteuid(0)


@contextlib.contextmanager
def leased(path: str, inode: int) -> Iterator[int]:
    """The segment at path, under a write lease: the kernel grants it only if no other process has the file open or
    mapped (whatever its PID namespace) and makes anyone opening it meanwhile wait until the block ends. Raises
    Kept with the reason otherwise. The file itself is not changed. Yields the descriptor the lease is on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise Kept(GONE if e.errno == errno.ENOENT else e.strerror or str(e)) from None
    try:  # closing fd ends the lease
        st = os.fstat(fd)
        if st.st_ino != inode:
            raise Kept("replaced by another file since it was listed")
        try:
            _lease(fd, st.st_uid)
        except OSError as e:
            if e.errno == errno.EAGAIN:
                raise Kept("a process /proc did not show has it open or mapped", held=True) from None
            raise Kept(f"cannot make sure nobody holds it ({e.strerror})") from None
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def lease_breaks_ignored() -> Iterator[None]:
    """A lease broken by someone opening the file signals SIGIO, whose default action ends the process."""
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGIO, previous)


def remove(directory: str, entry: Entry) -> Entry | str:
    """Unlink one segment under its lease: the entry as removed, its bytes those the removal freed, or why it stays.
    A name whose file has another link (a hard link elsewhere in the tmpfs) frees nothing: its pages stay with the
    other name, and the entry says so. Freed means the file's last link went while only the lease held it open."""
    path = os.path.join(directory, entry.name)
    try:
        with leased(path, entry.inode) as fd:
            if os.lstat(path).st_ino != entry.inode:
                return "replaced by another file since it was listed"
            os.unlink(path)
            links = os.fstat(fd).st_nlink
    except Kept as e:
        return str(e)
    except OSError as e:
        return e.strerror or str(e)
    if links:
        return dataclasses.replace(entry, bytes=0, why=f"nothing freed: {links} other link(s) to the same file remain")
    return entry


def confirm(directory: str, plan: Plan) -> Plan:
    """The leaked ones the kernel says someone holds after all (a holder /proc could not show) move to kept."""
    leaked, kept = [], list(plan.kept)
    for entry in plan.leaked:
        try:
            with leased(os.path.join(directory, entry.name), entry.inode):
                leaked.append(entry)
        except Kept as e:
            if e.held:
                kept.append(dataclasses.replace(entry, why=str(e)))
            elif str(e) != GONE:  # not ours to lease, or replaced: the listing stays as /proc saw it
                leaked.append(entry)
    return Plan(tuple(leaked), tuple(kept), plan.unrecognised)


def _only(plan: Plan, names: tuple[str, ...]) -> Plan:
    if not names:
        return plan
    for name in names:
        if "/" in name or name in (".", ".."):
            raise UsageError(f"{name!r}: give segment names as listed in the directory, not paths")
        if recognise(name) is None:
            raise UsageError(f"{name!r} is not a segment shmdoctor knows ({PATTERNS}); nothing was removed")
    keep = set(names)
    return Plan(tuple(e for e in plan.leaked if e.name in keep), tuple(e for e in plan.kept if e.name in keep), ())


def _directory(directory: str) -> str:
    """The directory to clean, refused unless it is /dev/shm or the mount point of a tmpfs."""
    if not os.path.isdir(directory):
        if directory == SHM:
            raise ProbeError(f"there is no {SHM} here (--ipc=none?): nothing to clean")
        raise UsageError(f"--path {directory!r} is not a directory")
    directory = os.path.abspath(directory)
    if directory != SHM and not tmpfs_mount_point(directory):
        # Segment names are exact, but a project directory is still no place to delete files from.
        raise UsageError(f"--path {directory!r} is not the mount point of a tmpfs: nothing was removed")
    return directory


def clean(directory: str, names: tuple[str, ...] = (), *, yes: bool = False, exclusive: bool = False) -> Cleaned:
    """The leaked segments of directory (only those named, if any) and, with yes, their removal.

    exclusive: the user says no process of another PID namespace uses the directory, so a PyTorch segment's creator
    pid can be checked here even outside the host's PID namespace; refused where the directory is the host's.
    Ctrl-C lands between two removals, never inside one: what is reported removed is what went.
    """
    directory = _directory(directory)
    if exclusive and (why := shared_with_the_host(directory)):
        raise UsageError(f"--exclusive: {why}, which other containers' processes may use; nothing was removed")
    try:
        size, used, _ = local.shm_usage(directory)
    except OSError as e:
        raise ProbeError(f"cannot read the usage of {directory} (statvfs: {e.strerror})") from None
    found, held = unheld(directory, creators_visible_here=exclusive or creators_visible())
    plan = _only(found, names)
    removed: list[Entry] = []
    failed: list[tuple[Entry, str]] = []
    interrupted = False
    try:
        with lease_breaks_ignored():
            plan = confirm(directory, plan)
            for entry in plan.leaked if yes else ():
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                try:
                    outcome = remove(directory, entry)
                    if isinstance(outcome, Entry):
                        removed.append(outcome)
                    else:
                        failed.append((entry, outcome))
                finally:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except KeyboardInterrupt:
        interrupted = True
    return Cleaned(
        directory=directory,
        size_bytes=size,
        used_bytes=used,
        plan=plan,
        yes=yes,
        exclusive=exclusive,
        removed=tuple(removed),
        failed=tuple(failed),
        unreadable=tuple(held.unreadable),
        interrupted=interrupted,
    )
