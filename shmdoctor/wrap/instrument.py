"""run's side of the child's instrumentation: the environment that loads site/sitecustomize.py into every Python
process of the job (torchrun's ranks, multiprocessing's children), and the records they leave in the channel, read
back as facts: each DataLoader's settings per process, and the bytes of one batch as its workers measured it.

The channel is a private folder of JSON lines, one file per process. What comes back is bounded and validated like
any input: the child is a program of the user's, not ours."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..limits import MAX_BATCH, MAX_BYTES, MAX_PREFETCH, MAX_RANKS, MAX_WORKERS
from ..loader import combined_requirement, loader_config
from ..model import LoaderConfig, Requirement

SITE = str(Path(__file__).resolve().parent / "site")
CHANNEL = "SHMDOCTOR_RUN_CHANNEL"  # as site/_shmdoctor_site.py reads it
STDERR = "SHMDOCTOR_RUN_STDERR"  # set: the child's Python processes copy what they write to sys.stderr there too
MAX_FILES = 4096  # processes that may report: ranks and their workers
MAX_FILE_BYTES = 256 * 1024  # of one process's records: a few lines each
MAX_LINE = 4096
MAX_ERRORS = 5  # errors of the instrumentation kept for the report


@dataclass(frozen=True)
class SeenLoader:
    """One DataLoader of one process, as it said of itself, and its batch as its workers measured it."""

    pid: int
    batch_size: int | None  # a batch sampler of its own: the samples its workers collated; None: batch_size=None
    num_workers: int
    prefetch_factor: int | None
    pin_memory: bool  # as torch applies it: False without an accelerator
    persistent_workers: bool
    rank: int | None = None  # torchrun's RANK, LOCAL_RANK where set
    local_rank: int | None = None
    batch_bytes: int | None = None  # the largest first batch a worker measured, page-rounded per tensor
    segments: int | None = None  # tensors (segments) in that batch
    workers_measured: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Instrumented:
    """What the instrumentation brought back: the loaders, and whether it ran at all."""

    pids: frozenset[int]  # the processes that reported anything: the job's, DataLoader workers included
    torch_processes: int  # that imported torch's DataLoader
    loaders: tuple[SeenLoader, ...]
    errors: tuple[str, ...]  # the instrumentation's own failures (the child went on regardless)


def environment(channel: str, environ: dict[str, str] | None = None, stderr: bool = False) -> dict[str, str]:
    """The child's environment: the site folder first on PYTHONPATH, the child's own entries kept after it; stderr:
    its Python processes copy their sys.stderr into the channel (run does not see the stream)."""
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (SITE, env.get("PYTHONPATH"))))
    env[CHANNEL] = channel
    if stderr:
        env[STDERR] = "1"
    return env


@contextlib.contextmanager
def channel():
    """A private folder for the records, removed with what the child left in it."""
    folder = tempfile.mkdtemp(prefix="shmdoctor-run-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _read(path: str, most: int, end: bool = False) -> bytes:
    """At most `most` bytes of a regular file the child made (its start, or its end): never a link followed, never a
    FIFO waited on; b"" when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as f:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            if end:
                f.seek(max(0, os.fstat(fd).st_size - most))
            return f.read(most)
        except OSError:
            return b""


def _records(folder: str):
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))[:MAX_FILES]
    except OSError:
        return
    for name in names:
        for line in _read(os.path.join(folder, name), MAX_FILE_BYTES).splitlines():
            if len(line) > MAX_LINE:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("pid"), int):
                yield rec


def stderr_copy(folder: str, cap: int) -> tuple[bytes, int]:
    """What the child's Python processes copied of their sys.stderr: (its last `cap` bytes, every byte copied).
    Each process's text whole (its .old part first), the process that wrote last at the end."""
    sizes: dict[str, int] = {}
    last: dict[str, int] = {}  # pid -> its last write
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.endswith((".err", ".err.old")):
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    pid = entry.name.split(".", 1)[0]
                    sizes[entry.name] = st.st_size
                    last[pid] = max(last.get(pid, 0), st.st_mtime_ns)
    parts: list[bytes] = []
    budget = cap
    # the last writer first, while the budget lasts; within one tick of the clock, the eldest (the lowest pid, the
    # parent of workers it outlives) counts as the later
    for pid in sorted(last, key=lambda p: (last[p], -int(p) if p.isdigit() else 0), reverse=True):
        for name in (f"{pid}.err", f"{pid}.err.old"):
            take = min(budget, sizes.get(name, 0))
            if take <= 0:
                continue
            data = _read(os.path.join(folder, name), take, end=True)
            parts.append(data)
            budget -= len(data)
    return b"".join(reversed(parts)), sum(sizes.values())


def _count(rec: dict, key: str, most: int, least: int = 0) -> int | None:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        return None
    return value


def read(folder: str) -> Instrumented:
    """The records of every process, validated; a record that is not what the hook writes is left out."""
    loaders: dict[str, dict] = {}
    batches: dict[str, list[dict]] = {}
    pids: set[int] = set()
    torch_pids: set[int] = set()
    errors: list[str] = []
    for rec in _records(folder):
        pids.add(rec["pid"])
        kind, key = rec.get("kind"), rec.get("loader")
        if kind == "torch":
            torch_pids.add(rec["pid"])
        elif kind == "error" and len(errors) < MAX_ERRORS:
            errors.append(f"{str(rec.get('where'))[:20]}: {str(rec.get('error'))[:300]}")
        elif kind == "loader" and isinstance(key, str) and _count(rec, "num_workers", MAX_WORKERS) is not None:
            loaders.setdefault(key, rec)
        elif kind == "batch" and isinstance(key, str) and _count(rec, "bytes", MAX_BYTES) is not None:
            batches.setdefault(key, []).append(rec)
    seen = []
    for key, rec in loaders.items():
        measured = batches.get(key, [])
        biggest = max(measured, key=lambda b: b["bytes"], default=None)
        batch_size = _count(rec, "batch_size", MAX_BATCH, 1)
        if batch_size is None and biggest is not None:
            batch_size = _count(biggest, "samples", MAX_BATCH, 1)
        seen.append(
            SeenLoader(
                pid=rec["pid"],
                batch_size=batch_size,
                num_workers=rec["num_workers"],
                prefetch_factor=_count(rec, "prefetch_factor", MAX_PREFETCH, 1),
                pin_memory=rec.get("pin_memory") is True,
                persistent_workers=rec.get("persistent_workers") is True,
                rank=_count(rec, "rank", MAX_RANKS * 1024),
                local_rank=_count(rec, "local_rank", MAX_RANKS),
                batch_bytes=biggest["bytes"] if biggest else None,
                segments=_count(biggest, "segments", MAX_BATCH) if biggest else None,
                workers_measured=len({b["pid"] for b in measured}),
            )
        )
    seen.sort(key=lambda s: (s.rank if s.rank is not None else -1, s.pid))
    return Instrumented(frozenset(pids), len(torch_pids), tuple(seen), tuple(errors))


def configs(seen: tuple[SeenLoader, ...]) -> tuple[list[LoaderConfig], list[str]]:
    """Each loader with a measured batch as a LoaderConfig (one per process: the same loader made anew each epoch
    is one), and a note for each left out."""
    out: dict[tuple[int, LoaderConfig], None] = {}
    left = []
    for s in seen:
        if s.batch_bytes is None:
            left.append(f"a loader of pid {s.pid} (num_workers={s.num_workers}): no worker measured a batch")
            continue
        try:
            config = loader_config(
                batch_size=s.batch_size or 1,  # None: batch_size=None, each item sent as it is
                num_workers=s.num_workers,
                prefetch_factor=s.prefetch_factor if s.num_workers else None,
                batch_bytes=s.batch_bytes,
                # under a byte a sample (a collate of its own): no sample size, the batch measured all the same
                sample_bytes=(s.batch_bytes // s.batch_size or None) if s.batch_size and s.segments == 1 else None,
                tensors_per_batch=s.segments or 1,
                pin_memory=s.pin_memory,
            )
        except UsageError as e:
            left.append(f"a loader of pid {s.pid}: {e}")
            continue
        out[(s.pid, config)] = None
    return [c for _, c in out], left


def requirement(seen: tuple[SeenLoader, ...]) -> tuple[Requirement | None, list[str]]:
    """What the loaders seen need of /dev/shm together: identical loaders of different processes are ranks;
    different loaders alive at once (training and validation, as a loop interleaves them) add up."""
    found, notes = configs(seen)
    if not found:
        return None, notes
    processes = len({s.pid for s in seen if s.batch_bytes is not None})
    return combined_requirement(found, processes), notes
