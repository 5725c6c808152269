"""/dev/shm over time: a Sampler reads a tmpfs's use (statvfs, cheap) and, when due, who holds it (/proc, costly),
keeps the tally (peak, biggest hold per process) and hands out documents: Start, one Sample per reading, Summary.
watch() is the loop around it, stopped by its duration, SIGINT or SIGTERM. `shmdoctor watch` is this loop
rendered; other commands that watch a run can drive a Sampler themselves."""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import ClassVar

from ..errors import ProbeError, UsageError
from ..exits import ExitCode
from ..model import SHM
from ..probe import holders as holders_probe
from ..probe import local
from ..probe.holders import Holder, Holders
from ..sizes import MiB
from . import segments
from .removal import list_files

HEARTBEAT_S = 5.0  # a sample is news when usage or the holders changed, and at least this often


def within_budget(peak: int, budget: int) -> bool:
    """The peak against the loader's predicted need, with slack: its semaphores and queues take a few pages (1 MiB
    and 1 %) besides its batches."""
    return peak <= budget + MiB + budget // 100


@dataclass(frozen=True)
class Start:
    """What is watched, and how often."""

    kind: ClassVar[str] = "watch.start"
    directory: str
    interval: float
    holders_every: float  # 0: never scan
    budget_bytes: int | None  # the loader's predicted need


@dataclass(frozen=True)
class Sample:
    kind: ClassVar[str] = "watch.sample"
    t: float  # seconds since the start
    time: datetime
    size_bytes: int
    used_bytes: int
    peak_bytes: int  # so far
    budget_bytes: int | None
    holders: Holders | None  # scanned at this sample, or None
    consumers: dict[str, int] | None  # with a scan: the use per consumer, by name (segments.by_consumer)
    news: bool  # usage or holders changed since the last news, or HEARTBEAT_S passed: what a reader needs to see
    holders_changed: bool  # scanned, and not the same holds (pid, bytes) as the last scan that was news


@dataclass(frozen=True)
class Summary:
    kind: ClassVar[str] = "watch.summary"
    directory: str
    duration_s: float
    samples: int
    holder_scans: int
    size_bytes: int
    start_used_bytes: int | None
    peak_bytes: int
    peak_t: float
    budget_bytes: int | None
    over_budget: bool | None  # None without a budget
    holders: tuple[Holder, ...]  # each process's biggest hold seen, biggest first
    unreadable: tuple[str, ...]
    consumers: dict[str, int] = field(default_factory=dict)  # each consumer's biggest use seen, biggest first
    stopped_by: int | None = None  # the signal that ended it, None when its duration did

    @property
    def interrupted(self) -> bool:
        return self.stopped_by is not None

    @property
    def exit_code(self) -> ExitCode:
        if self.stopped_by is None:
            return ExitCode.OK
        return ExitCode.INTERRUPTED if self.stopped_by == signal.SIGINT else ExitCode.TERMINATED


@dataclass
class Tally:
    """What the samples add up to: the state behind the summary."""

    size: int = 0
    start_used: int | None = None
    peak: int = 0
    peak_t: float = 0.0
    samples: int = 0
    scans: int = 0
    top: dict[int, Holder] = field(default_factory=dict)  # per pid: its biggest hold seen
    consumers: dict[str, int] = field(default_factory=dict)  # per consumer: its biggest use seen
    unreadable: set[str] = field(default_factory=set)

    def sample(self, t: float, size: int, used: int) -> None:
        self.samples += 1
        self.size = size
        if self.start_used is None:
            self.start_used = used
        if used > self.peak or self.samples == 1:
            self.peak, self.peak_t = used, t

    def scanned(self, found: Holders, consumers: dict[str, int]) -> None:
        self.scans += 1
        for term, size in consumers.items():
            self.consumers[term] = max(size, self.consumers.get(term, 0))
        self.unreadable.update(found.unreadable)
        for h in found.holders:
            if h.pid not in self.top or h.bytes > self.top[h.pid].bytes:
                self.top[h.pid] = h

    def biggest(self) -> list[Holder]:
        return sorted(self.top.values(), key=lambda h: (-h.bytes, h.pid))

    def biggest_consumers(self) -> dict[str, int]:
        return dict(sorted(self.consumers.items(), key=lambda kv: (-kv[1], kv[0])))


class Sampler:
    """One tmpfs, sampled when asked: sample(t) reads it, record() judges a reading into a Sample."""

    def __init__(self, directory: str = SHM, *, holders_every: float = 0.0, budget: int | None = None):
        if not os.path.isdir(directory):
            if directory == SHM:
                raise ProbeError(f"there is no {SHM} here (--ipc=none?): nothing to watch")
            raise UsageError(f"--path {directory!r} is not a directory")
        self.directory, self.holders_every, self.budget = directory, holders_every, budget
        self.tally = Tally()
        self._scan_t, self._scan_used = -math.inf, -1  # no scan yet: any use differs
        self._news_used: int | None = None
        self._news_t = -math.inf
        self._news_holders: list[tuple[int, int]] | None = None

    def start(self, interval: float) -> Start:
        return Start(self.directory, interval, self.holders_every, self.budget)

    def sample(self, t: float) -> Sample:
        """Read the usage now, and the holders (and the listing, for the use per consumer) when it changed and the
        last scan is holders_every old."""
        try:
            size, used, _ = local.shm_usage(self.directory)
        except OSError as e:
            raise ProbeError(f"cannot read the usage of {self.directory} (statvfs: {e.strerror})") from None
        fresh, files = None, None
        if self.holders_every and used != self._scan_used and t - self._scan_t >= self.holders_every:
            try:
                fresh = holders_probe.scan(self.directory)
            except OSError as e:
                raise ProbeError(f"cannot scan the holders of {self.directory}: {e.strerror}") from None
            files = list_files(self.directory)
            self._scan_t, self._scan_used = t, used
        return self.record(t, size, used, fresh, files=files)

    def record(
        self,
        t: float,
        size: int,
        used: int,
        fresh: Holders | None,
        now: datetime | None = None,
        *,
        files: list[segments.File] | None = None,
    ) -> Sample:
        """A reading (and a scan with the listing of the directory, if one was made), added to the tally and told
        as news or not."""
        self.tally.sample(t, size, used)
        consumers = None
        if fresh is not None:
            consumers = segments.by_consumer(files or [], fresh)
            self.tally.scanned(fresh, consumers)
        holds = [(h.pid, h.bytes) for h in fresh.holders] if fresh is not None else self._news_holders
        holders_changed = holds != self._news_holders
        news = used != self._news_used or t - self._news_t >= HEARTBEAT_S or holders_changed
        if news:
            self._news_used, self._news_t, self._news_holders = used, t, holds
        return Sample(
            t=t,
            time=now or datetime.now(timezone.utc),
            size_bytes=size,
            used_bytes=used,
            peak_bytes=self.tally.peak,
            budget_bytes=self.budget,
            holders=fresh,
            consumers=consumers,
            news=news,
            holders_changed=holders_changed,
        )

    def summary(self, elapsed: float, stopped_by: int | None = None) -> Summary:
        w = self.tally
        return Summary(
            directory=self.directory,
            duration_s=elapsed,
            samples=w.samples,
            holder_scans=w.scans,
            size_bytes=w.size,
            start_used_bytes=w.start_used,
            peak_bytes=w.peak,
            peak_t=w.peak_t,
            budget_bytes=self.budget,
            over_budget=None if self.budget is None else not within_budget(w.peak, self.budget),
            holders=tuple(w.biggest()),
            unreadable=tuple(sorted(w.unreadable)),
            consumers=w.biggest_consumers(),
            stopped_by=stopped_by,
        )


def watch(sampler: Sampler, *, interval: float, duration: float | None, emit: Callable[[Sample], None]) -> Summary:
    """Sample every interval until duration (None: forever) or SIGINT / SIGTERM; each sample goes to emit as it
    comes. Returns the summary, with the signal that stopped it."""
    start = time.monotonic()
    due = start
    stopped = None
    handlers = {}
    try:
        # Installed here, not inherited: a watch started in a script's background (where SIGINT is ignored) still
        # stops on `kill -INT`, and SIGTERM (docker stop, timeout) ends it with its summary too. Inside the try: a
        # signal landing between two installs is a stop like any other, and what was installed is restored.
        for s in (signal.SIGINT, signal.SIGTERM):
            handlers[s] = signal.getsignal(s)
            signal.signal(s, _stop)
        while True:
            t = time.monotonic() - start
            emit(sampler.sample(t))
            if duration is not None and t >= duration:
                break
            due += interval
            if duration is not None:
                due = min(due, start + duration)
            time.sleep(max(0.0, due - time.monotonic()))
    except _Stopped as e:
        stopped = e.signum
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    return sampler.summary(time.monotonic() - start, stopped)


class _Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame) -> None:
    raise _Stopped(signum)
