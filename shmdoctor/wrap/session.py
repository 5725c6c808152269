"""One supervised command: the facts before, /dev/shm and the memory cgroup sampled while it runs (watch's Sampler,
from a thread, at a low rate), its stderr's tail judged after it ends. What is printed is the renderer's business:
`before` is called with the facts before the command starts."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from ..diagnose import Exit, Explanation, Measured, judge, scan_text
from ..errors import ProbeError, internal
from ..model import SHM, Facts, Report, Requirement
from ..probe import cgroup, local
from ..probe.holders import Holder
from ..shm.sampling import Sampler
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
    fault: str = ""  # an internal error of ours after the command ended (its exit code and the report stand)

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


class _Sampling:
    """The sampler's thread: /dev/shm (statvfs) every interval, holders when due, the memory cgroup's peak."""

    def __init__(self, sampler: Sampler | None, interval: float):
        self.sampler, self.interval = sampler, interval
        self.memory_peak: int | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="shm-sampler", daemon=True)
        self.start_t = time.monotonic()

    def _loop(self) -> None:
        while True:
            t = time.monotonic() - self.start_t
            if self.sampler is not None:
                try:
                    self.sampler.sample(t)
                except ProbeError:  # /dev/shm unmounted under us: stop sampling, never the command
                    self.sampler = None
            _, used = cgroup.memory()
            if used is not None and (self.memory_peak is None or used > self.memory_peak):
                self.memory_peak = used
            if self.stop.wait(self.interval):
                return

    def start(self) -> None:
        self.start_t = time.monotonic()
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(5)


def bare(name: str, facts: Facts, ended: child.Ended, stderr_bytes: int, e: Exception) -> Outcome:
    """What is known for sure after a fault of ours: the command, its exit and the facts; no judgement."""
    fault = internal(e)
    explanation = Explanation(Report(facts, None, (), notes=(fault,)), (), source=f"{name}'s stderr")
    return Outcome(name, facts, ended, None, explanation, (), stderr_bytes, fault=fault)


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
    sampling = _Sampling(sampler, interval)
    ring = Ring()
    seen = None
    with contextlib.ExitStack() as stack:
        channel = stack.enter_context(instrument.channel()) if instrumented else None
        env = instrument.environment(channel) if channel else None
        try:
            ended = child.run(argv, ring, on_spawn=sampling.start, env=env)
        finally:
            if sampling.thread.is_alive():
                sampling.finish()
        if channel:
            seen = instrument.read(channel)
    name = command_name(argv)
    try:
        return _conclude(name, facts, ended, sampler, sampling, ring, need, seen)
    except Exception as e:  # a fault of ours after the command ended: said, and its exit code stands
        return bare(name, facts, ended, ring.total, e)


def _conclude(
    name: str,
    facts: Facts,
    ended: child.Ended,
    sampler: Sampler | None,
    sampling: _Sampling,
    ring: Ring,
    need: Requirement | None,
    seen: Instrumented | None,
) -> Outcome:
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
    need, source, notes = _need(need, seen)
    status = Exit(ended.code, None, "the command's exit status") if ended.code else None
    diagnoses = scan_text(ring.tail()).diagnoses()
    explanation = judge(
        diagnoses, facts, ended=status, measured=measured, need=need, notes=notes, source=f"{name}'s stderr"
    )
    return Outcome(name, facts, ended, measured, explanation, holders, ring.total, seen, source)


def _need(given: Requirement | None, seen: Instrumented | None) -> tuple[Requirement | None, str | None, tuple]:
    """The loader options win (the user said so); else what the instrumented child's loaders need."""
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
    return read, "read" if read else None, tuple(notes)
