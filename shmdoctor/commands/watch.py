"""shmdoctor watch: /dev/shm while training runs: used over time, the peak, the budget, and who holds it."""

from __future__ import annotations

import json
import math
import os
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import click

from ..cli import INTERRUPTED
from ..errors import ProbeError, UsageError
from ..model import SCHEMA
from ..options import FORMATS, loader_kwargs, loader_options, requirement_from
from ..probe import holders as holders_probe
from ..probe import local
from ..sizes import MiB, format_size

DEFAULT_PATH = "/dev/shm"
HEARTBEAT_S = 5.0  # text mode prints a line when usage changes, and at least this often
HOLDERS_SHOWN = 5
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


def _holder_dict(h: holders_probe.Holder) -> dict:
    return {
        "pid": h.pid,
        "command": h.command,
        "bytes": h.bytes,
        "segments": len(h.segments),
        "unlinked_count": h.unlinked_count,
    }


def _holder_line(h: holders_probe.Holder) -> str:
    n = len(h.segments)
    return (
        f"           pid {h.pid:<7} {format_size(h.bytes):>10} in {n} segment{'s' if n != 1 else ''} "
        f"({h.unlinked_count} unlinked)  {h.command[:80]}"
    )


def within_budget(peak: int, budget: int) -> bool:
    """The peak against the loader's predicted need, with slack: its semaphores and queues take a few pages (1 MiB
    and 1 %) besides its batches."""
    return peak <= budget + MiB + budget // 100


def _share(part: int, whole: int | None) -> str:
    if not whole:
        return "-"
    return f"{part / whole:.1%}" if part < whole / 10 else f"{part / whole:.0%}"


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
    emit = _JsonLines(directory, budget) if fmt == "json" else _Text(directory, budget, interval, holders_every)

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
            emit.sample(t, size, used, w, fresh)
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
    emit.summary(w, time.monotonic() - start, stopped is not None)
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


class _JsonLines:
    def __init__(self, directory: str, budget: int | None):
        self.directory, self.budget = directory, budget

    def sample(self, t, size, used, w: Watch, fresh) -> None:
        doc = {
            "schema": SCHEMA,
            "type": "sample",
            "t": round(t, 3),
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "size_bytes": size,
            "used_bytes": used,
            "peak_bytes": w.peak,
            "budget_bytes": self.budget,
        }
        if fresh is not None:  # present only in the samples where /proc was scanned
            doc["holders"] = [_holder_dict(h) for h in fresh.holders]
            doc["held_bytes"] = fresh.bytes
        click.echo(json.dumps(doc))

    def summary(self, w: Watch, elapsed: float, interrupted: bool) -> None:
        click.echo(
            json.dumps(
                {
                    "schema": SCHEMA,
                    "type": "summary",
                    "directory": self.directory,
                    "duration_s": round(elapsed, 3),
                    "samples": w.samples,
                    "holder_scans": w.scans,
                    "size_bytes": w.size,
                    "start_used_bytes": w.start_used,
                    "peak_bytes": w.peak,
                    "peak_t": round(w.peak_t, 3),
                    "budget_bytes": self.budget,
                    "peak_over_budget": None if self.budget is None else not within_budget(w.peak, self.budget),
                    "holders": [_holder_dict(h) for h in w.biggest()],
                    "unreadable": sorted(w.unreadable),
                    "interrupted": interrupted,
                }
            )
        )


class _Text:
    def __init__(self, directory: str, budget: int | None, interval: float, holders_every: float):
        self.budget, self.printed_used, self.printed_t, self.printed_holders = budget, None, -math.inf, None
        scans = f"holders every {holders_every:g} s when it changes" if holders_every else "no holder scans"
        line = f"watching {directory} every {interval:g} s, {scans}"
        if budget:
            line += f"; budget {format_size(budget)} (the loader's predicted need)"
        click.echo(line + "; Ctrl-C to stop")

    def sample(self, t, size, used, w: Watch, fresh) -> None:
        holders = [(h.pid, h.bytes) for h in fresh.holders] if fresh is not None else self.printed_holders
        if used != self.printed_used or t - self.printed_t >= HEARTBEAT_S or holders != self.printed_holders:
            line = f"{t:8.1f}s  used {format_size(used):>10} ({_share(used, size):>4} of {format_size(size)})"
            line += f"  peak {format_size(w.peak)}"
            if self.budget:
                line += f"  budget {_share(used, self.budget)}"
            click.echo(line)
            self.printed_used, self.printed_t = used, t
        if holders != self.printed_holders:  # the holders, under the sample they were scanned at
            for h in fresh.holders[:HOLDERS_SHOWN]:
                click.echo(_holder_line(h))
            if len(fresh.holders) > HOLDERS_SHOWN:
                click.echo(f"           and {len(fresh.holders) - HOLDERS_SHOWN} more (--format json lists them all)")
            self.printed_holders = holders

    def summary(self, w: Watch, elapsed: float, interrupted: bool) -> None:
        out = [f"\nSummary  {w.samples} samples over {elapsed:.1f} s" + (" (interrupted)" if interrupted else "")]
        out.append(
            f"  peak     {format_size(w.peak)} at {w.peak_t:.1f}s, {_share(w.peak, w.size)} of {format_size(w.size)} "
            f"({format_size(max(0, w.peak - (w.start_used or 0)))} above the {format_size(w.start_used)} in use "
            "at the start)"
        )
        if self.budget:
            verdict = (
                f"the peak took {_share(w.peak, self.budget)} of it"
                if within_budget(w.peak, self.budget)
                else f"the peak went {format_size(w.peak - self.budget)} over it: something else uses /dev/shm too, "
                "or the loader is not the one described"
            )
            out.append(f"  budget   {format_size(self.budget)} predicted for the loader: {verdict}")
        if w.scans:
            biggest = w.biggest()
            out.append(
                f"  holders  {len(biggest)} process{'es' if len(biggest) != 1 else ''} seen in {w.scans} scans"
                + (", biggest hold of each:" if biggest else "")
            )
            out += [_holder_line(h) for h in biggest[:HOLDERS_SHOWN]]
            if len(biggest) > HOLDERS_SHOWN:
                out.append(f"           and {len(biggest) - HOLDERS_SHOWN} more (--format json lists them all)")
        if w.unreadable:
            out.append(f"note: could not read {len(w.unreadable)} process(es): {'; '.join(sorted(w.unreadable)[:3])}")
        click.echo("\n".join(out))
