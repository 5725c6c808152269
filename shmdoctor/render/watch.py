"""watch's stream as text or JSON lines (shmdoctor/watch/2): a start, one sample each reading, then the summary.

Text prints a sample only when it is news (the Sampler says which) and the holders under the sample they were
scanned at; JSON prints every sample as one object per line and has no start line."""

from __future__ import annotations

import json

from ..probe.holders import Holder
from ..shm import segments
from ..shm.sampling import Sample, Start, Summary
from ..sizes import format_size
from . import schema_id

HOLDERS_SHOWN = 5


def _holder_dict(h: Holder) -> dict:
    return {
        "pid": h.pid,
        "command": h.command,
        "bytes": h.bytes,
        "segments": len(h.segments),
        "unlinked_count": h.unlinked_count,
        "consumers": sorted({segments.consumer(s.name) for s in h.segments}),
    }


def _holder_lines(holders: tuple[Holder, ...]) -> list[str]:
    out = []
    for h in holders[:HOLDERS_SHOWN]:
        n = len(h.segments)
        out.append(
            f"           pid {h.pid:<7} {format_size(h.bytes):>10} in {n} segment{'s' if n != 1 else ''} "
            f"({h.unlinked_count} unlinked)  {h.command[:80]}"
        )
    if len(holders) > HOLDERS_SHOWN:
        out.append(f"           and {len(holders) - HOLDERS_SHOWN} more (--format json lists them all)")
    return out


def _consumers_line(consumers: dict[str, int]) -> str:
    return ", ".join(f"{term} {format_size(size)}" for term, size in consumers.items())


def _share(part: int, whole: int | None) -> str:
    if not whole:
        return "-"
    return f"{part / whole:.1%}" if part < whole / 10 else f"{part / whole:.0%}"


def start_text(doc: Start) -> str:
    scans = f"holders every {doc.holders_every:g} s when it changes" if doc.holders_every else "no holder scans"
    line = f"watching {doc.directory} every {doc.interval:g} s, {scans}"
    if doc.budget_bytes:
        line += f"; budget {format_size(doc.budget_bytes)} (the loader's predicted need)"
    return line + "; Ctrl-C to stop"


def start_json(doc: Start) -> str:
    return ""


def sample_text(doc: Sample) -> str:
    if not doc.news:
        return ""
    line = f"{doc.t:8.1f}s  used {format_size(doc.used_bytes):>10} ({_share(doc.used_bytes, doc.size_bytes):>4} of "
    line += f"{format_size(doc.size_bytes)})  peak {format_size(doc.peak_bytes)}"
    if doc.budget_bytes:
        line += f"  budget {_share(doc.used_bytes, doc.budget_bytes)}"
    out = [line]
    if doc.holders_changed and doc.holders is not None:
        out += _holder_lines(doc.holders.holders)
    return "\n".join(out)


def sample_json(doc: Sample) -> str:
    out = {
        "schema": schema_id(doc.kind),
        "type": "sample",
        "t": round(doc.t, 3),
        "time": doc.time.isoformat(timespec="milliseconds"),
        "size_bytes": doc.size_bytes,
        "used_bytes": doc.used_bytes,
        "peak_bytes": doc.peak_bytes,
        "budget_bytes": doc.budget_bytes,
    }
    if doc.holders is not None:  # present only in the samples where /proc was scanned
        out["holders"] = [_holder_dict(h) for h in doc.holders.holders]
        out["held_bytes"] = doc.holders.bytes
        out["consumers"] = doc.consumers or {}
    return json.dumps(out)


def summary_text(doc: Summary) -> str:
    out = [
        f"\nSummary  {doc.samples} samples over {doc.duration_s:.1f} s" + (" (interrupted)" if doc.interrupted else "")
    ]
    out.append(
        f"  peak     {format_size(doc.peak_bytes)} at {doc.peak_t:.1f}s, {_share(doc.peak_bytes, doc.size_bytes)} of "
        f"{format_size(doc.size_bytes)} ({format_size(max(0, doc.peak_bytes - (doc.start_used_bytes or 0)))} above "
        f"the {format_size(doc.start_used_bytes)} in use at the start)"
    )
    if doc.budget_bytes:
        verdict = (
            f"the peak went {format_size(doc.peak_bytes - doc.budget_bytes)} over it: something else uses /dev/shm "
            "too, or the loader is not the one described"
            if doc.over_budget
            else f"the peak took {_share(doc.peak_bytes, doc.budget_bytes)} of it"
        )
        out.append(f"  budget   {format_size(doc.budget_bytes)} predicted for the loader: {verdict}")
    if doc.holder_scans:
        n = len(doc.holders)
        out.append(
            f"  holders  {n} process{'es' if n != 1 else ''} seen in {doc.holder_scans} scans"
            + (", biggest hold of each:" if n else "")
        )
        out += _holder_lines(doc.holders)
        if doc.consumers:
            out.append(f"  by name  {_consumers_line(doc.consumers)} (each consumer's biggest use seen)")
    if doc.unreadable:
        out.append(f"note: could not read {len(doc.unreadable)} process(es): {'; '.join(doc.unreadable[:3])}")
    return "\n".join(out)


def summary_json(doc: Summary) -> str:
    return json.dumps(
        {
            "schema": schema_id(doc.kind),
            "type": "summary",
            "directory": doc.directory,
            "duration_seconds": round(doc.duration_s, 3),
            "samples": doc.samples,
            "holder_scans": doc.holder_scans,
            "size_bytes": doc.size_bytes,
            "start_used_bytes": doc.start_used_bytes,
            "peak_bytes": doc.peak_bytes,
            "peak_t": round(doc.peak_t, 3),
            "budget_bytes": doc.budget_bytes,
            "peak_over_budget": doc.over_budget,
            "holders": [_holder_dict(h) for h in doc.holders],
            "consumers": doc.consumers,
            "unreadable": list(doc.unreadable),
            "interrupted": doc.interrupted,
        }
    )
