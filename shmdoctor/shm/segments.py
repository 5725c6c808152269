"""Which files of /dev/shm are known segments, and which of those are leaked. Pure functions: no I/O here."""

from __future__ import annotations

import re
from collections import Counter
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
# sgl_shm_mq_<creator pid>_<8 hex>: SGLang's tensor-parallel message queue (a Python SharedMemory named after its
# creator), mapped by the creator and its readers for as long as the server runs; the creator's pid is checked
# as torch_'s is.
SGLANG = re.compile(r"sgl_shm_mq_([0-9]+)_[0-9a-f]{8}")


@dataclass(frozen=True)
class Known:
    pattern: re.Pattern[str]
    shape: str  # the name as documentation writes it
    kind: str  # who makes it, in words
    consumer: str  # the requirement's term it belongs to (Workload's), or "other"
    kept: str = ""  # why one nobody holds is still not proven leaked: never removed (empty: removable)


KNOWN = (
    Known(TORCH, "torch_<pid>_<n>_<n>", "PyTorch", "dataloader"),
    # nccl-XXXXXX (mkstemp's six letters or digits, then fallocate): NCCL's shared-memory transport, unlinked once
    # both peers mapped it.
    Known(re.compile(r"nccl-[A-Za-z0-9]{6}"), "nccl-XXXXXX", "NCCL", "nccl"),
    # sem.mp-<8 of [a-z0-9_]>: Python multiprocessing's named semaphores (synchronize.SemLock._make_name:
    # '/mp-' + tempfile._RandomNameSequence), used by DataLoader queues, mapped by every user and unlinked by
    # multiprocessing or its resource tracker; a named one nobody maps outlived a killed process.
    Known(re.compile(r"sem\.mp-[a-z0-9_]{8}"), "sem.mp-XXXXXXXX", "Python multiprocessing semaphore", "dataloader"),
    Known(SGLANG, "sgl_shm_mq_<pid>_<8 hex>", "SGLang", "sglang"),
    # psm_<8 hex>: multiprocessing.shared_memory.SharedMemory's own names ('/psm_' + secrets.token_hex(4)), vLLM's
    # broadcast rings among others. Such a segment may outlive every handle by design (a producer closes it, a
    # consumer attaches later by name; only unlink() ends it), and its name carries no creator: kept.
    Known(
        re.compile(r"psm_[0-9a-f]{8}"),
        "psm_<8 hex>",
        "Python shared_memory (vLLM)",
        "vllm",
        kept="Python shared_memory outlives its handles by design and its name carries no creator: "
        "nothing proves it leaked (remove it yourself once no program of yours attaches to it by name)",
    ),
    # plasmaXXXXXX: Ray's object store (plasma's dlmalloc: mkstemp, then unlink at once). Seen by name only when a
    # store died between the two; its pages are found through its holders' maps.
    Known(
        re.compile(r"plasma[A-Za-z0-9]{6}"),
        "plasmaXXXXXX",
        "Ray object store",
        "ray",
        kept="Ray unlinks its object store at once and its name carries no creator: nothing proves it leaked",
    ),
    # triton_python_backend_shm_region_<uuid>: one region per python backend model instance, kept until its stub
    # exits; a stub may be restarted and attach to it again.
    Known(
        re.compile(r"triton_python_backend_shm_region_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
        "triton_python_backend_shm_region_<uuid>",
        "Triton python backend",
        "triton",
        kept="its name carries no creator, and a Triton server may restart a stub that attaches to it again: "
        "nothing proves it leaked (it goes when its server stops)",
    ),
)
# Other sem.* files and anything else belong to programs whose rules shmdoctor does not know.
PATTERNS = ", ".join(k.shape for k in KNOWN)
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
    links: int = 1  # st_nlink: the file's names, in this folder or not


@dataclass(frozen=True)
class Entry:
    name: str
    inode: int
    bytes: int
    kind: str  # the Known kind
    why: str = ""  # why it is kept
    links: int = 1


def freed(entries: tuple[Entry, ...]) -> int:
    """What removing these names frees: each file once however many of its names are among them, and nothing of a
    file with a name that stays (a hard link elsewhere keeps its pages)."""
    named = Counter(e.inode for e in entries)
    return sum({e.inode: e.bytes for e in entries if named[e.inode] >= e.links}.values())


@dataclass(frozen=True)
class Plan:
    leaked: tuple[Entry, ...]
    kept: tuple[Entry, ...]  # known segments that are in use
    unrecognised: tuple[File, ...]

    @property
    def leaked_bytes(self) -> int:
        return freed(self.leaked)


def known(name: str) -> Known | None:
    return next((k for k in KNOWN if k.pattern.fullmatch(name)), None)


def recognise(name: str) -> str | None:
    k = known(name)
    return k.kind if k else None


def consumer(name: str) -> str:
    """The consumer a segment's name says it belongs to (a requirement term), or "other"."""
    k = known(name)
    return k.consumer if k else "other"


def creator_pid(name: str) -> int | None:
    """The pid a PyTorch or SGLang segment's name carries (in its creator's PID namespace)."""
    m = TORCH.fullmatch(name) or SGLANG.fullmatch(name)
    return int(m.group(1)) if m else None


def plan_removal(files: list[File], holders: Holders, *, creators_visible: bool = True) -> Plan:
    """Leaked: a known name that no process holds and whose creator (when the name says) is not alive.

    A name that carries no creator and may outlive its holders by design (psm_, plasma, Triton's) is kept, with why.
    creators_visible False: the directory may be shared with processes of PID namespaces this one cannot see, so a
    creator's pid cannot be checked and PyTorch's and SGLang's segments are kept.
    """
    held_by: dict[int, list[int]] = {}
    for h in holders.holders:
        for s in h.segments:
            held_by.setdefault(s.inode, []).append(h.pid)
    leaked, kept, unrecognised = [], [], []
    for f in sorted(files, key=lambda f: f.name):
        k = known(f.name)
        creator = creator_pid(f.name)
        if k is None:
            unrecognised.append(f)
            continue
        kind = k.kind
        if f.inode in held_by:
            pids = held_by[f.inode]
            kept.append(Entry(f.name, f.inode, f.bytes, kind, "held by pid " + ", ".join(map(str, sorted(pids)))))
        elif k.kept:
            kept.append(Entry(f.name, f.inode, f.bytes, kind, k.kept))
        elif creator is not None and not creators_visible:
            kept.append(Entry(f.name, f.inode, f.bytes, kind, NOT_VISIBLE))
        elif creator is not None and creator in holders.pids:
            why = f"its creator, pid {creator}, is alive" + (" (a batch in flight)" if k.pattern is TORCH else "")
            kept.append(Entry(f.name, f.inode, f.bytes, kind, why))
        else:
            leaked.append(Entry(f.name, f.inode, f.bytes, kind, links=f.links))
    return Plan(tuple(leaked), tuple(kept), tuple(unrecognised))


def by_consumer(files: list[File], holders: Holders) -> dict[str, int]:
    """The directory's use per consumer, by name: every file listed and every unlinked segment a process holds
    (PyTorch's descriptors, NCCL's and Ray's stores are seen only there), each inode once; "other" for the rest.
    Biggest first."""
    named = {f.inode: (f.name, f.bytes) for f in files}
    for h in holders.holders:
        for s in h.segments:
            named.setdefault(s.inode, (s.name, s.bytes))
    use: dict[str, int] = {}
    for name, size in named.values():
        term = consumer(name)
        use[term] = use.get(term, 0) + size
    return dict(sorted(use.items(), key=lambda kv: (-kv[1], kv[0])))
