"""Who holds the segments of a tmpfs (/dev/shm): per process, from /proc/<pid>/fd and /proc/<pid>/maps.

PyTorch's default sharing strategy unlinks each segment as soon as it is mapped, so a listing of /dev/shm shows
nothing: the descriptors ('/dev/shm/torch_... (deleted)') and the maps are the only trace. Maps are matched by
device number, so a container's own /dev/shm (another tmpfs) never counts as ours. An unreadable /proc entry is
recorded in `unreadable` (a 'probe-incomplete' fact), a vanished process is skipped: it holds nothing any more.

/proc is read here directly, not through psutil: psutil's open_files() drops the descriptors whose path ends in
' (deleted)', which are exactly the unlinked segments this module is about, and it does not read maps at all.
A process is named by its executable and first argument only (`python train.py`): the rest of a command line may
carry secrets (`--password=...`) and never leaves this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..model import SHM

PF_KTHREAD = 0x00200000  # /proc/<pid>/stat flags: kernel threads hold no files


@dataclass(frozen=True)
class Segment:
    inode: int
    name: str  # relative to the directory, without ' (deleted)'
    bytes: int  # st_blocks * 512: the memory it really uses (the mapping's length when it cannot be stat'ed)
    unlinked: bool


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str
    segments: tuple[Segment, ...]

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.segments)

    @property
    def unlinked_count(self) -> int:
        return sum(s.unlinked for s in self.segments)


@dataclass(frozen=True)
class Holders:
    holders: tuple[Holder, ...]  # biggest first
    unreadable: tuple[str, ...] = ()  # processes that could not be read, in words
    # Every pid seen, in every PID namespace (NSpid): segment names that carry their creator's pid are checked
    # against it. Empty unless scan(..., namespaces=True).
    pids: frozenset[int] = frozenset()

    @property
    def bytes(self) -> int:
        """Held bytes, each segment once (a worker and the main process map the same one)."""
        return sum({s.inode: s.bytes for h in self.holders for s in h.segments}.values())


def _read(path: str) -> str:
    with open(path, errors="replace") as f:
        return f.read()


def _is_kernel_thread(proc: str, pid: str) -> bool:
    try:
        stat = _read(f"{proc}/{pid}/stat")
        return bool(int(stat[stat.rindex(")") + 2 :].split()[6]) & PF_KTHREAD)
    except (OSError, ValueError, IndexError):
        return False


def command_name(pid: int, proc: str = "/proc") -> str:
    """The executable's basename and the script (`python train.py`), never the arguments after them; an argument
    that is an option (`-c`, `--password=...`) is left out too, and so is the rest of a title a process wrote over
    its argv[0] (setproctitle). A kernel thread: its [comm]."""
    try:
        argv = _read(f"{proc}/{pid}/cmdline").split("\0")
        if not argv[0]:
            return f"[{_read(f'{proc}/{pid}/comm').strip()}]"
    except OSError:
        return "?"
    shown = [os.path.basename(argv[0].split(" ", 1)[0])]
    if len(argv) > 1 and argv[1] and not argv[1].startswith("-"):
        shown.append(argv[1])
    return " ".join(shown)


def _nspids(proc: str, pid: str) -> list[int]:
    """The pid in each PID namespace it lives in; none for a zombie (it will never create or hold anything)."""
    try:
        status = dict(line.split(":", 1) for line in _read(f"{proc}/{pid}/status").splitlines() if ":" in line)
        if status.get("State", "").strip().startswith("Z"):
            return []
        return [int(p) for p in status["NSpid"].split()]
    except (OSError, ValueError, KeyError):
        return [int(pid)]


def _segments(proc: str, pid: str, prefix: str, dev: int, maps_dev: str) -> dict[int, Segment]:
    """The segments one process holds, by inode; raises PermissionError (unreadable) or FileNotFoundError (gone)."""
    found: dict[int, Segment] = {}
    base = f"{proc}/{pid}"
    for fd in os.listdir(f"{base}/fd"):
        try:
            link = os.readlink(f"{base}/fd/{fd}")
            if not link.startswith(prefix):
                continue
            st = os.stat(f"{base}/fd/{fd}")
        except FileNotFoundError:  # closed meanwhile
            continue
        if st.st_dev == dev:
            name, unlinked = _name(link[len(prefix) :])
            found[st.st_ino] = Segment(st.st_ino, name, st.st_blocks * 512, unlinked)
    text = _read(f"{base}/maps")
    if maps_dev not in text:
        return found
    lengths: dict[int, int] = {}
    paths: dict[int, str] = {}
    for line in text.splitlines():
        fields = line.split(None, 5)
        if len(fields) < 6 or fields[3] != maps_dev or fields[4] == "0":
            continue
        inode = int(fields[4])
        start, _, end = fields[0].partition("-")
        lengths[inode] = lengths.get(inode, 0) + int(end, 16) - int(start, 16)
        paths.setdefault(inode, fields[0])
        if inode not in found:
            name, unlinked = _name(fields[5].rsplit("/", 1)[-1])
            found[inode] = Segment(inode, name, -1, unlinked)
    for inode, seg in found.items():
        if seg.bytes < 0:  # mapped only: stat the mapping (root only), else its length
            try:
                size = os.stat(f"{base}/map_files/{paths[inode]}").st_blocks * 512
            except OSError:
                size = lengths[inode]
            found[inode] = Segment(inode, seg.name, size, seg.unlinked)
    return found


def _name(text: str) -> tuple[str, bool]:
    text = text.rstrip("\n")
    return (text[: -len(" (deleted)")], True) if text.endswith(" (deleted)") else (text, False)


def scan(directory: str = SHM, proc: str = "/proc", *, namespaces: bool = False) -> Holders:
    """Every process holding a file of `directory` (open descriptor or memory map, unlinked ones included)."""
    dev = os.stat(directory).st_dev
    maps_dev = f"{os.major(dev):02x}:{os.minor(dev):02x}"
    prefix = os.path.realpath(directory).rstrip("/") + "/"
    holders, unreadable, pids = [], [], set()
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        if namespaces:  # before reading: a process we cannot read is alive all the same
            pids.update(_nspids(proc, pid))
        try:
            found = _segments(proc, pid, prefix, dev, maps_dev)
        except FileNotFoundError:  # exited while we looked
            continue
        except PermissionError as e:
            if not _is_kernel_thread(proc, pid):
                unreadable.append(f"pid {pid} ({command_name(int(pid), proc)[:40]}): {(e.strerror or str(e)).lower()}")
            continue
        except ProcessLookupError:
            continue
        if found:
            segments = tuple(sorted(found.values(), key=lambda s: (-s.bytes, s.name)))
            holders.append(Holder(int(pid), command_name(int(pid), proc), segments))
    holders.sort(key=lambda h: (-h.bytes, h.pid))
    return Holders(tuple(holders), tuple(unreadable), frozenset(pids))
