"""watch's samples and summary, as text lines or JSON lines: one string per sample (None when text has nothing new
to say), then the summary. The command prints them as they come."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import TYPE_CHECKING

from ..model import SCHEMA
from ..probe.holders import Holder, Holders
from ..sizes import format_size

if TYPE_CHECKING:
    from ..commands.watch import Watch

HEARTBEAT_S = 5.0  # text prints a line when usage changes, and at least this often
HOLDERS_SHOWN = 5


def _holder_dict(h: Holder) -> dict:
    return {
        "pid": h.pid,
        "command": h.command,
        "bytes": h.bytes,
        "segments": len(h.segments),
        "unlinked_count": h.unlinked_count,
    }


def _holder_line(h: Holder) -> str:
    n = len(h.segments)
    return (
        f"           pid {h.pid:<7} {format_size(h.bytes):>10} in {n} segment{'s' if n != 1 else ''} "
        f"({h.unlinked_count} unlinked)  {h.command[:80]}"
    )


def _share(part: int, whole: int | None) -> str:
    if not whole:
        return "-"
    return f"{part / whole:.1%}" if part < whole / 10 else f"{part / whole:.0%}"


class JsonLines:
    def __init__(self, directory: str, budget: int | None):
        self.directory, self.budget = directory, budget

    def header(self) -> str | None:
        return None

    def sample(self, t: float, now: datetime, size: int, used: int, w: Watch, fresh: Holders | None) -> str:
        doc = {
            "schema": SCHEMA,
            "type": "sample",
            "t": round(t, 3),
            "time": now.isoformat(timespec="milliseconds"),
            "size_bytes": size,
            "used_bytes": used,
            "peak_bytes": w.peak,
            "budget_bytes": self.budget,
        }
        if fresh is not None:  # present only in the samples where /proc was scanned
            doc["holders"] = [_holder_dict(h) for h in fresh.holders]
            doc["held_bytes"] = fresh.bytes
        return json.dumps(doc)

    def summary(self, w: Watch, elapsed: float, interrupted: bool, over_budget: bool | None) -> str:
        return json.dumps(
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
                "peak_over_budget": over_budget,
                "holders": [_holder_dict(h) for h in w.biggest()],
                "unreadable": sorted(w.unreadable),
                "interrupted": interrupted,
            }
        )


class Text:
    """Remembers what it last printed: a sample line only when usage or the holders changed, or every HEARTBEAT_S."""

    def __init__(self, directory: str, budget: int | None, interval: float, holders_every: float):
        self.directory, self.interval, self.holders_every = directory, interval, holders_every
        self.budget, self.printed_used, self.printed_t, self.printed_holders = budget, None, -math.inf, None

    def header(self) -> str:
        scans = f"holders every {self.holders_every:g} s when it changes" if self.holders_every else "no holder scans"
        line = f"watching {self.directory} every {self.interval:g} s, {scans}"
        if self.budget:
            line += f"; budget {format_size(self.budget)} (the loader's predicted need)"
        return line + "; Ctrl-C to stop"

    def sample(self, t: float, now: datetime, size: int, used: int, w: Watch, fresh: Holders | None) -> str | None:
        out = []
        holders = [(h.pid, h.bytes) for h in fresh.holders] if fresh is not None else self.printed_holders
        if used != self.printed_used or t - self.printed_t >= HEARTBEAT_S or holders != self.printed_holders:
            line = f"{t:8.1f}s  used {format_size(used):>10} ({_share(used, size):>4} of {format_size(size)})"
            line += f"  peak {format_size(w.peak)}"
            if self.budget:
                line += f"  budget {_share(used, self.budget)}"
            out.append(line)
            self.printed_used, self.printed_t = used, t
        if holders != self.printed_holders:  # the holders, under the sample they were scanned at
            out += [_holder_line(h) for h in fresh.holders[:HOLDERS_SHOWN]]
            if len(fresh.holders) > HOLDERS_SHOWN:
                out.append(f"           and {len(fresh.holders) - HOLDERS_SHOWN} more (--format json lists them all)")
            self.printed_holders = holders
        return "\n".join(out) if out else None

    def summary(self, w: Watch, elapsed: float, interrupted: bool, over_budget: bool | None) -> str:
        out = [f"\nSummary  {w.samples} samples over {elapsed:.1f} s" + (" (interrupted)" if interrupted else "")]
        out.append(
            f"  peak     {format_size(w.peak)} at {w.peak_t:.1f}s, {_share(w.peak, w.size)} of {format_size(w.size)} "
            f"({format_size(max(0, w.peak - (w.start_used or 0)))} above the {format_size(w.start_used)} in use "
            "at the start)"
        )
        if self.budget:
            verdict = (
                f"the peak took {_share(w.peak, self.budget)} of it"
                if not over_budget
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
        return "\n".join(out)
