"""Capacity arithmetic: how much /dev/shm a target has for a loader today, and the sizes worth asking for.
Pure functions of Facts: no I/O, no opinions (rules judge, fixes say what to paste)."""

from __future__ import annotations

from .model import Facts
from .sizes import MiB, nice_size

MARGIN = 1.25  # over the computed need: allocator slack, a validation iterator, a second look
HEADROOM = 1 / MARGIN  # a loader that takes more than this share of what is available is cutting it fine
# Memory the training process and its workers take beside /dev/shm (Python, torch, samples before collation), per
# rank: an estimate, so that a memory limit is not judged as if /dev/shm were all it held.
PROCESS_RESERVE = 256 * MiB


def shm_free(facts: Facts) -> int | None:
    """Free /dev/shm; its size where use is unknown (inspect, a file); 0 where there is none."""
    shm = facts.shm
    if not shm.present:
        return 0
    return shm.free_bytes if shm.free_bytes is not None else shm.size_bytes


def memory_room(facts: Facts, ranks: int = 1) -> int | None:
    """What the memory limit leaves for /dev/shm: the limit, less what is in use and the training processes' own."""
    if facts.memory.limit_bytes is None:
        return None
    return max(0, facts.memory.limit_bytes - (facts.memory.used_bytes or 0) - PROCESS_RESERVE * ranks)


def available(facts: Facts, ranks: int = 1) -> int | None:
    """The most /dev/shm a loader can take today: what is free, capped by the memory limit's room."""
    caps = [c for c in (shm_free(facts), memory_room(facts, ranks)) if c is not None]
    return min(caps) if caps else None


def memory_binds(facts: Facts, ranks: int = 1) -> bool:
    """The memory limit, not /dev/shm, is what runs out first."""
    room, shm = memory_room(facts, ranks), shm_free(facts)
    return room is not None and (shm is None or room < shm)


def shm_size_for(need_bytes: int, facts: Facts) -> int:
    """--shm-size to ask for: the need plus what others already use there, with margin, rounded to a size people
    type. The host's /dev/shm is left behind by the fix (a private one starts empty), so its use does not count."""
    others = 0 if facts.shm.source in ("host", "host-ipc") else facts.shm.used_bytes or 0
    return nice_size(int((need_bytes + others) * MARGIN))


def memory_for(shm_bytes: int, facts: Facts, ranks: int = 1) -> int:
    """A memory limit that holds shm_bytes of /dev/shm beside what is in use and the training processes."""
    return nice_size(int((facts.memory.used_bytes or 0) + PROCESS_RESERVE * ranks + shm_bytes * MARGIN))
