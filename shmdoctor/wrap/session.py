"""One supervised command: the facts before, /dev/shm and the memory cgroup sampled while it runs (watch's Sampler,
from a thread, at a low rate), its stderr's tail judged after it ends. What is printed is the renderer's business:
`before` is called with the facts before the command starts."""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

import psutil

from ..diagnose import Exit, Explanation, Measured, judge, scan_text
from ..errors import ProbeError, internal
from ..loader import inferred_requirement
from ..model import SHM, Facts, Report, Requirement
from ..probe import cgroup, local
from ..probe.holders import Holder
from ..shm import removal
from ..shm.creations import Creations
from ..shm.sampling import Sampler
from ..shm.segments import Entry, File, creator_pid, recognise
from . import child, instrument
from .instrument import Instrumented, SeenLoader
from .ring import Ring


@dataclass(frozen=True)
class Outcome:
    """run's document: what ran, how it ended, what /dev/shm did meanwhile, and the diagnosis."""

    kind: ClassVar[str] = "run"
    command: str  # the program (and script) only: arguments may carry secrets
    facts: Facts
    ended: child.Ended
    measured: Measured | None  # None when there was no /dev/shm to sample
    explanation: Explanation
    holders: tuple[Holder, ...]  # each process's biggest hold seen
    stderr_bytes: int
    instrumented: Instrumented | None = None  # None: --no-instrument
    need_source: str | None = None  # given (loader options), read (from the instrumented child); None: no need
    leftovers: tuple[Entry, ...] | None = None  # segments its dead left in /dev/shm; None: not looked at
    clean: str | None = None  # the command that frees them
    fault: str = ""  # an internal error of ours after the command ended (its exit code and the report stand)
    left_files: tuple[File, ...] = ()  # other files that appeared in /dev/shm while it ran, still there after it
    stderr_read: str = "all"  # all (through our pipe), python (the terminal was its own: its Python's sys.stderr), none
    open_line: bool = False  # the last of its stderr we saw ended without a newline

    @property
    def loaders(self) -> tuple[SeenLoader, ...]:
        return self.instrumented.loaders if self.instrumented else ()

    @property
    def exit_code(self) -> int:
        return self.ended.code


def command_name(argv: list[str]) -> str:
    name = os.path.basename(argv[0])
    if len(argv) > 1 and argv[1].endswith((".py", ".sh")) and not argv[1].startswith("-"):
        name += " " + argv[1]
    return name


# The job's pids, where a segment's creator cannot be checked after the job (not the host's PID namespace): each
# segment's creator as the segment is created (inotify), while it lives; without inotify, the child's descendants
# scanned each second where the instrumented child names its workers itself (they live for an epoch), else every
# sample: workers that die at their first batch live for a fraction of a second (the seed's loader in 64 MiB: half a
# second, or less than the default 0.1 s interval on a quiet machine), and only their pids tie the segments they
# left to the job.
JOB_SCAN_S = 1.0
ANCESTRY = 64  # parents walked up from a segment's creator to the child, at most


class _Sampling:
    """The sampler's thread: /dev/shm (statvfs) every interval, holders when due, the memory cgroup's peak, and the
    job's pids (track)."""

    def __init__(self, sampler: Sampler | None, interval: float, track: bool, scan_every: float = JOB_SCAN_S):
        self.sampler, self.interval, self.scan_every = sampler, interval, scan_every
        self.memory_peak: int | None = None
        # watched before the child starts: no creation is missed
        self.creations = Creations.watch(sampler.directory) if track and sampler is not None else None
        self.scan = track and self.creations is None
        self.job: set[int] = set()
        self.next_scan = 0.0
        self.pid = 0
        self.wake_r, self.wake_w = os.pipe()  # a byte written here stops the threads
        self.threads = [threading.Thread(target=self._loop, name="shm-sampler", daemon=True)]
        if self.creations is not None:  # a thread of its own: a sample's holder scan must not delay a creation past
            # its creator's death (a worker refused its first batch lives for milliseconds)
            self.threads.append(threading.Thread(target=self._watch, args=(self.creations,), daemon=True))
        self.start_t = time.monotonic()

    def _loop(self) -> None:
        waiting = select.poll()
        waiting.register(self.wake_r, select.POLLIN)
        while True:
            t = time.monotonic() - self.start_t
            if self.sampler is not None:
                try:
                    self.sampler.sample(t)
                except ProbeError:  # /dev/shm unmounted under us: stop sampling, never the command
                    self.sampler = None
            if self.scan and t >= self.next_scan:
                self.next_scan = t + self.scan_every
                self.job |= _descendants(self.pid)
            _, used = cgroup.memory()
            if used is not None and (self.memory_peak is None or used > self.memory_peak):
                self.memory_peak = used
            if waiting.poll(self.interval * 1000):  # until the next sample, or a stop
                return

    def _watch(self, creations: Creations) -> None:
        """Each creation as it comes, until a stop (those queued before it too)."""
        waiting = select.poll()
        waiting.register(self.wake_r, select.POLLIN)
        waiting.register(creations.fileno(), select.POLLIN)
        while True:
            ready = {fd for fd, _ in waiting.poll()}
            if creations.fileno() in ready:
                self._created(*creations.read())
            if self.wake_r in ready:
                return

    def _created(self, names: list[str], lost: bool) -> None:
        """A segment's creator joins the job when the child is its ancestor. Events lost (the kernel's queue was
        full): the child's descendants, scanned at once."""
        if lost:
            self.job |= _descendants(self.pid)
        for name in names:
            pid = creator_pid(name)
            if pid is not None and pid not in self.job and _descends(pid, self.pid):
                self.job.add(pid)

    def start(self, pid: int) -> None:
        self.pid, self.job = pid, {pid}
        self.start_t = time.monotonic()
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        """Stop the threads (if they started) and close what they watched; a thread stuck past the bound keeps them."""
        if any(thread.is_alive() for thread in self.threads):
            os.write(self.wake_w, b"\0")
            for thread in self.threads:
                thread.join(5)
        if not any(thread.is_alive() for thread in self.threads):
            os.close(self.wake_r)
            os.close(self.wake_w)
            if self.creations is not None:
                self.creations.close()


STDERR_NOTES = {
    "python": "its stderr was the terminal's, left to it: what its Python processes wrote through sys.stderr was read",
    "none": "its stderr was the terminal's, left to it, and not read (--no-instrument): judged from its exit alone",
}


def bare(name: str, facts: Facts, ended: child.Ended, stderr_bytes: int, e: Exception) -> Outcome:
    """What is known for sure after a fault of ours: the command, its exit and the facts; no judgement."""
    fault = internal(e)
    explanation = Explanation(Report(facts, None, (), notes=(fault,)), (), source=f"{name}'s stderr")
    return Outcome(name, facts, ended, None, explanation, (), stderr_bytes, fault=fault)


def _descendants(pid: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(pid).children(recursive=True)}
    except psutil.Error:
        return set()


def _descends(pid: int, root: int) -> bool:
    """Whether pid is root or a descendant of it, by its parents in /proc (one whose parent died was handed to a
    reaper: no longer told). A zombie still names its parent."""
    for _ in range(ANCESTRY):
        if pid == root:
            return True
        if pid <= 1 or (parent := _parent(pid)) is None:
            return False
        pid = parent
    return False


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[1])  # after the command: state, ppid
    except (OSError, ValueError, IndexError):
        return None


def supervise(
    argv: list[str],
    need: Requirement | None,
    *,
    interval: float,
    holders_every: float,
    before: Callable[[Facts], None],
    instrumented: bool = True,
) -> Outcome:
    child.resolve(argv[0])  # a missing command is one line and 127, before any output of ours
    facts = local.probe()
    before(facts)
    try:
        sampler = Sampler(SHM, holders_every=holders_every, budget=need.bytes if need else None)
    except ProbeError:  # no /dev/shm (--ipc=none): the command runs all the same, unsampled
        sampler = None
    scan_every = JOB_SCAN_S if instrumented else interval
    sampling = _Sampling(sampler, interval, track=not removal.creators_visible(), scan_every=scan_every)
    try:  # what was there before: the job's leftovers are what appeared since
        existing = {f.inode for f in removal.list_files(SHM)} if sampler is not None else None
    except ProbeError:
        existing = None
    ring = Ring()
    seen = None
    tee = not os.isatty(2)  # a terminal stays the child's own stderr (colours, progress bars), as under env
    with contextlib.ExitStack() as stack:
        channel = stack.enter_context(instrument.channel()) if instrumented else None
        env = instrument.environment(channel, stderr=not tee) if channel else None
        try:
            ended = child.run(argv, ring, on_spawn=sampling.start, env=env, tee=tee)
        finally:
            sampling.finish()
        if channel:
            seen = instrument.read(channel)
            if not tee:
                text, ring.total = instrument.stderr_copy(channel, ring.cap)
                ring.append(text)
    name = command_name(argv)
    try:
        outcome = _conclude(name, facts, ended, sampler, sampling, ring, need, seen, existing, tee)
    except Exception as e:  # a fault of ours after the command ended: said, and its exit code stands
        outcome = bare(name, facts, ended, ring.total, e)
    return replace(outcome, open_line=tee and ring.tail()[-1:] not in (b"", b"\n"))


def _conclude(
    name: str,
    facts: Facts,
    ended: child.Ended,
    sampler: Sampler | None,
    sampling: _Sampling,
    ring: Ring,
    need: Requirement | None,
    seen: Instrumented | None,
    existing: set[int] | None,
    tee: bool,
) -> Outcome:
    with contextlib.suppress(ProbeError):  # after its death: /dev/shm as it left it (the facts line: before)
        facts = local.probe()
    measured = None
    holders: tuple[Holder, ...] = ()
    if sampler is not None and sampler.tally.samples:
        summary = sampler.summary(ended.elapsed)
        holders = summary.holders
        measured = Measured(
            summary.peak_bytes,
            summary.size_bytes,
            summary.peak_t,
            ended.elapsed,
            sampling.memory_peak,
            summary.start_used_bytes or 0,
        )
    leftovers, clean, others = _leftovers(existing, sampling.job | (seen.pids if seen else set()))
    need, source, notes = _need(need, seen, leftovers or ())
    stderr_read = "all" if tee else "python" if seen is not None else "none"
    if stderr_read in STDERR_NOTES:
        notes += (STDERR_NOTES[stderr_read],)
    status = Exit(ended.code, None, "the command's exit status") if ended.code else None
    scan = scan_text(ring.tail())
    explanation = judge(
        scan.diagnoses(),
        facts,
        ended=status,
        measured=measured,
        need=need,
        notes=notes,
        source=f"{name}'s stderr",
        clues=scan.clues,  # what the log says of the job: NCCL's ranks and channels
    )
    return Outcome(
        name,
        facts,
        ended,
        measured,
        explanation,
        holders,
        ring.total,
        seen,
        source,
        leftovers,
        clean,
        left_files=others,
        stderr_read=stderr_read,
    )


def _leftovers(before: set[int] | None, job: set[int]) -> tuple[tuple[Entry, ...] | None, str | None, tuple[File, ...]]:
    """What the job's dead left in /dev/shm, the clean command that frees it, and the files of no kind shmdoctor
    knows that appeared while it ran and are still there (the job's, or another's sharing /dev/shm: clean leaves
    them alone)."""
    if before is None:
        return None, None, ()
    try:
        left = removal.left_behind(SHM, before, job).leaked
        new = removal.list_files(SHM)
        others = tuple(sorted((f for f in new if f.inode not in before and not recognise(f.name)), key=str))
    except (OSError, ProbeError):  # /dev/shm gone or unreadable since: not looked at
        return None, None, ()
    return left, removal.clean_command(SHM, [e.name for e in left]) if left else None, others


def _need(
    given: Requirement | None, seen: Instrumented | None, left: tuple[Entry, ...]
) -> tuple[Requirement | None, str | None, tuple]:
    """The loader options win (the user said so); else what the instrumented child's loaders need; else what the
    segments its workers left say of them."""
    notes: list[str] = []
    if seen is None:
        notes.append("instrumentation off (--no-instrument)")
        read = None
    else:
        read, notes = instrument.requirement(seen.loaders)
        notes += [f"instrumentation failed (the command ran unchanged): {e}" for e in seen.errors]
        if not seen.torch_processes:
            notes.append("no process of the command imported torch's DataLoader: nothing to read of a loader")
    if given is not None:
        return given, "given", tuple(notes)
    if read is not None:
        return read, "read", tuple(notes)
    inferred = inferred_requirement(_batches(left))
    return inferred, "inferred" if inferred else None, tuple(notes)


def _batches(left: tuple[Entry, ...]) -> dict[int, int]:
    """Creator pid -> the biggest segment it left (its size as created: a failed allocation holds no page)."""
    out: dict[int, int] = {}
    for e in left:
        pid = creator_pid(e.name)
        try:
            size = os.stat(os.path.join(SHM, e.name)).st_size
        except OSError:
            continue
        if pid is not None:
            out[pid] = max(out.get(pid, 0), size)
    return out
