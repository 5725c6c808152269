"""Which files of /dev/shm are known segments, and which of those are leaked. Pure functions: no I/O here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..probe.holders import Holders

# Segments whose owners remove them while they still hold them, so that one no live process holds (descriptor or
# map) is the leftover of a process that died. Names are matched whole, exactly as their makers write them, so
# that no other file (torch_utils.py, nccl-tests.log) is ever taken for one:
# torch_<creator pid>_<random>_<counter>: ATen's NewProcessWideShmHandle (MapAllocator.cpp), for both sharing
# strategies. file_descriptor unlinks its segments at once; file_system ones outlive a SIGKILLed process. In
# flight (queued between a worker and the loop) nobody maps them, so a segment whose creator is alive is never
# leaked (see plan_removal).
TORCH = re.compile(r"torch_([0-9]+)_[0-9]+_[0-9]+")
KNOWN = (
    (TORCH, "torch_<pid>_<n>_<n>", "PyTorch"),
    # nccl-XXXXXX (mkstemp's six letters or digits, then fallocate): NCCL's shared-memory transport, unlinked once
    # both peers mapped it.
    (re.compile(r"nccl-[A-Za-z0-9]{6}"), "nccl-XXXXXX", "NCCL"),
    # sem.mp-<8 of [a-z0-9_]>: Python multiprocessing's named semaphores (synchronize.SemLock._make_name:
    # '/mp-' + tempfile._RandomNameSequence), used by DataLoader queues, mapped by every user and unlinked by
    # multiprocessing or its resource tracker; a named one nobody maps outlived a killed process.
    (re.compile(r"sem\.mp-[a-z0-9_]{8}"), "sem.mp-XXXXXXXX", "Python multiprocessing semaphore"),
)
# Not included, on purpose: psm_* (multiprocessing.shared_memory) may outlive every handle by design (a producer
# closes it, a consumer attaches later by name; only unlink() ends it), so 'nobody holds it' does not mean leaked.
# Other sem.* files and anything else belong to programs whose rules shmdoctor does not know.
PATTERNS = ", ".join(shape for _, shape, _ in KNOWN)
NOT_VISIBLE = (
    "its creator's pid cannot be checked outside the host's PID namespace (a peer container sharing "
    "/dev/shm may have it in flight): clean --exclusive removes it when no other container shares this /dev/shm, "
    "as does clean in the host's PID namespace (docker run --pid=host)"
)


@dataclass(frozen=True)
class File:
    """One regular file at the top of the directory, as listed."""

    name: str
    inode: int
    bytes: int  # st_blocks * 512


@dataclass(frozen=True)
class Entry:
    name: str
    inode: int
    bytes: int
    kind: str  # the KNOWN label
    why: str = ""  # why it is kept


@dataclass(frozen=True)
class Plan:
    leaked: tuple[Entry, ...]
    kept: tuple[Entry, ...]  # known segments that are in use
    unrecognised: tuple[File, ...]

    @property
    def leaked_bytes(self) -> int:
        return sum(e.bytes for e in self.leaked)


def recognise(name: str) -> str | None:
    return next((label for pattern, _, label in KNOWN if pattern.fullmatch(name)), None)


def creator_pid(name: str) -> int | None:
    """The pid a PyTorch segment's name carries (in its creator's PID namespace)."""
    m = TORCH.fullmatch(name)
    return int(m.group(1)) if m else None


def plan_removal(files: list[File], holders: Holders, *, creators_visible: bool = True) -> Plan:
    """Leaked: a known name that no process holds and whose creator (when the name says) is not alive.

    creators_visible False: the directory may be shared with processes of PID namespaces this one cannot see, so a
    creator's pid cannot be checked and PyTorch's segments are kept.
    """
    held_by: dict[int, list[int]] = {}
    for h in holders.holders:
        for s in h.segments:
            held_by.setdefault(s.inode, []).append(h.pid)
    leaked, kept, unrecognised = [], [], []
    for f in sorted(files, key=lambda f: f.name):
        kind = recognise(f.name)
        creator = creator_pid(f.name)
        if kind is None:
            unrecognised.append(f)
        elif f.inode in held_by:
            pids = held_by[f.inode]
            kept.append(Entry(f.name, f.inode, f.bytes, kind, "held by pid " + ", ".join(map(str, sorted(pids)))))
        elif creator is not None and not creators_visible:
            kept.append(Entry(f.name, f.inode, f.bytes, kind, NOT_VISIBLE))
        elif creator is not None and creator in holders.pids:
            why = f"its creator, pid {creator}, is alive (a batch in flight)"
            kept.append(Entry(f.name, f.inode, f.bytes, kind, why))
        else:
            leaked.append(Entry(f.name, f.inode, f.bytes, kind))
    return Plan(tuple(leaked), tuple(kept), tuple(unrecognised))
