"""shmdoctor watch: /dev/shm while training runs: used over time, the peak, the budget, and who holds it."""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import click

from ..cli import INTERRUPTED
from ..errors import ProbeError, UsageError
from ..options import FORMATS, loader_kwargs, loader_options, requirement_from
from ..probe import holders as holders_probe
from ..probe import local
from ..render import watch as render
from ..sizes import MiB

DEFAULT_PATH = "/dev/shm"
TERMINATED = 128 + signal.SIGTERM  # 143, as a shell reports a process SIGTERM ended


@dataclass
class Watch:
    """What the samples add up to: the state behind the summary."""

    size: int = 0
    start_used: int | None = None
    peak: int = 0
    peak_t: float = 0.0
    samples: int = 0
    scans: int = 0
    holders: holders_probe.Holders | None = None  # the latest scan
    top: dict[int, holders_probe.Holder] = field(default_factory=dict)  # per pid: its biggest hold seen
    unreadable: set[str] = field(default_factory=set)

    def sample(self, t: float, size: int, used: int) -> None:
        self.samples += 1
        self.size = size
        if self.start_used is None:
            self.start_used = used
        if used > self.peak or self.samples == 1:
            self.peak, self.peak_t = used, t

    def scanned(self, found: holders_probe.Holders) -> None:
        self.scans += 1
        self.holders = found
        self.unreadable.update(found.unreadable)
        for h in found.holders:
            if h.pid not in self.top or h.bytes > self.top[h.pid].bytes:
                self.top[h.pid] = h

    def biggest(self) -> list[holders_probe.Holder]:
        return sorted(self.top.values(), key=lambda h: (-h.bytes, h.pid))


def _positive(name: str, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{name} must be a number of seconds greater than zero, got {value!r}")
    return value


def within_budget(peak: int, budget: int) -> bool:
    """The peak against the loader's predicted need, with slack: its semaphores and queues take a few pages (1 MiB
    and 1 %) besides its batches."""
    return peak <= budget + MiB + budget // 100


@click.command()
@click.option(
    "--interval",
    type=float,
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between samples of the usage (statvfs: cheap).",
)
@click.option(
    "--holders-every",
    type=float,
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between scans of /proc for holders, made only when the usage changed (the costly part).",
)
@click.option("--duration", type=float, metavar="SECONDS", help="Stop after this long (default: until Ctrl-C).")
@click.option("--path", "directory", default=DEFAULT_PATH, show_default=True, metavar="DIR", help="The tmpfs to watch.")
@loader_options
@click.option(
    "--format",
    "fmt",
    type=FORMATS,
    default="text",
    show_default=True,
    help="json: one JSON object per sample (JSON lines), then a summary object.",
)
def command(interval, holders_every, duration, directory, fmt, **loader) -> int:
    """Used / size of /dev/shm over time, the peak, the loader's predicted need as the budget, and who holds it per
    process (descriptors and maps, unlinked segments included). Ctrl-C ends it with a summary (exit 130; SIGTERM:
    143).

    \b
    shmdoctor watch
    shmdoctor watch --batch-size 100 --num-workers 4 --sample-bytes 1MiB --duration 600
    shmdoctor watch --format json --interval 1 > shm.jsonl
    """
    _positive("--interval", interval)
    _positive("--duration", duration)
    if not (math.isfinite(holders_every) and holders_every >= 0):
        raise UsageError(f"--holders-every must be 0 (never) or a number of seconds, got {holders_every!r}")
    if not os.path.isdir(directory):
        if directory == DEFAULT_PATH:
            raise ProbeError(f"there is no {DEFAULT_PATH} here (--ipc=none?): nothing to watch")
        raise UsageError(f"--path {directory!r} is not a directory")
    need = requirement_from(loader_kwargs(**loader))
    budget = need.bytes if need else None
    emit = (
        render.JsonLines(directory, budget)
        if fmt == "json"
        else render.Text(directory, budget, interval, holders_every)
    )
    header = emit.header()
    if header is not None:
        click.echo(header)

    w = Watch()
    start = time.monotonic()
    due = start
    last_scan_t, last_scan_used = -math.inf, None
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
            try:
                size, used, _ = local.shm_usage(directory)
            except OSError as e:
                raise ProbeError(f"cannot read the usage of {directory} (statvfs: {e.strerror})") from None
            w.sample(t, size, used)
            fresh = None
            if holders_every and used != last_scan_used and t - last_scan_t >= holders_every:
                try:
                    fresh = holders_probe.scan(directory)
                except OSError as e:
                    raise ProbeError(f"cannot scan the holders of {directory}: {e.strerror}") from None
                last_scan_t, last_scan_used = t, used
                w.scanned(fresh)
            line = emit.sample(t, datetime.now(timezone.utc), size, used, w, fresh)
            if line is not None:
                click.echo(line)  # flushed: one line (JSON: one object) per sample as it comes
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
    over_budget = None if budget is None else not within_budget(w.peak, budget)
    click.echo(emit.summary(w, time.monotonic() - start, stopped is not None, over_budget))
    if stopped is None:
        return 0
    click.echo("shmdoctor: interrupted" if stopped == signal.SIGINT else "shmdoctor: terminated", err=True)
    return INTERRUPTED if stopped == signal.SIGINT else TERMINATED


class _Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame) -> None:
    raise _Stopped(signum)
