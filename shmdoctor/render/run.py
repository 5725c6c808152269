"""run's lines on stderr (the command's stdout stays its own): the facts before, one line after a success (the peak
against the size: the job's real need), the diagnosis after a failure; and the --report document (shmdoctor/run/2)."""

from __future__ import annotations

import json
import signal

from ..diagnose.judge import FULL_SLACK
from ..model import Facts
from ..shm.segments import Entry, File
from ..sizes import MiB, format_size
from ..wrap.instrument import SeenLoader
from ..wrap.session import Outcome
from . import explain, schema_id
from .text import SOURCES

PREFIX = "shmdoctor run:"
NEED_SOURCES = {
    "read": "read from the loaders it ran",
    "given": "from the loader options",
}  # inferred: its formula says
LEFTOVER_NAMES = 100  # named in the JSON; the count and bytes are of all


def facts_line(facts: Facts, interval: float) -> str:
    shm = facts.shm
    if shm.present:
        where = (
            f"/dev/shm {format_size(shm.size_bytes)}, {format_size(shm.used_bytes)} used: "
            f"{SOURCES.get(shm.source, shm.source)}"
        )
        if shm.read_only:
            where += ", READ-ONLY (no segment can be made there)"
    else:
        where = "no /dev/shm (--ipc=none)"
    limit = facts.memory.limit_bytes
    memory = f"memory limit {format_size(limit)}" if limit else "no memory limit"
    return (
        f"{PREFIX} {where}; IPC {facts.ipc.mode}; {memory}; ulimit -n {facts.nofile or 'unlimited'}; "
        f"sampling every {interval:g} s"
    )


def _status(o: Outcome) -> str:
    code = o.exit_code
    sig = code - 128 if 128 < code < 160 else None
    name = f" ({signal.Signals(sig).name})" if sig and sig in signal.Signals._value2member_map_ else ""
    return f"{o.command} exited {code}{name} after {o.ended.elapsed:.1f} s"


def _peak(o: Outcome) -> str:
    m = o.measured
    if m is None:
        return "/dev/shm not sampled (there is none)"
    share = f" ({m.peak_bytes / m.size_bytes:.0%})" if m.size_bytes else ""
    line = f"/dev/shm peak {format_size(m.peak_bytes)} of {format_size(m.size_bytes)}{share} at {m.peak_t:.1f} s"
    if m.start_bytes >= MiB:  # a shared /dev/shm: what the command itself added
        added = format_size(max(0, m.peak_bytes - m.start_bytes))
        line += f" ({added} above the {format_size(m.start_bytes)} in use before)"
    return line


def _loaders(o: Outcome) -> list[str]:
    """One line per loader the child reported; the same loader in several processes (ranks) once, counted."""
    groups: dict[tuple, list[SeenLoader]] = {}
    for s in o.loaders:
        settings = (s.batch_size, s.num_workers, s.prefetch_factor, s.pin_memory, s.persistent_workers)
        groups.setdefault((*settings, s.batch_bytes, s.segments), []).append(s)
    lines = []
    for same in groups.values():
        s = same[0]
        who = f"rank {s.rank}" if s.rank is not None else f"pid {s.pid}"
        who = f"{len(same)} processes" if len(same) > 1 else who
        batch = (
            f"one batch {format_size(s.batch_bytes)} in {s.segments} tensor(s), measured in the workers"
            if s.batch_bytes is not None
            else "no batch measured"
        )
        lines.append(
            f"{PREFIX} loader ({who}): batch_size={s.batch_size}, num_workers={s.num_workers}, "
            f"prefetch_factor={s.prefetch_factor}, pin_memory={s.pin_memory}, "
            f"persistent_workers={s.persistent_workers}; {batch}"
        )
    return lines


def taken(files: tuple[Entry, ...] | tuple[File, ...]) -> int:
    """The bytes these names take: each file once, however many of its names are among them."""
    return sum({f.inode: f.bytes for f in files}.values())


def _leftovers(o: Outcome) -> list[str]:
    if not o.leftovers:
        return []
    names = ", ".join(e.name for e in o.leftovers[:3]) + (", ..." if len(o.leftovers) > 3 else "")
    size = taken(o.leftovers)
    if not size:  # an allocation refused whole (posix_fallocate) leaves the name, no page: nothing to free
        return [
            f"{PREFIX} its dead processes left {len(o.leftovers)} empty segment(s) in /dev/shm ({names}): names "
            f"without pages, they take no space; remove them with `{o.clean}`"
        ]
    return [
        f"{PREFIX} its dead processes left {len(o.leftovers)} segment(s) in /dev/shm, {format_size(size)} ({names}): "
        f"a job started again has that much less; free them with `{o.clean}`"
    ]


def _left_files(o: Outcome) -> list[str]:
    if not o.left_files:
        return []
    names = ", ".join(repr(f.name) for f in o.left_files[:3]) + (", ..." if len(o.left_files) > 3 else "")
    size = format_size(taken(o.left_files))
    return [
        f"{PREFIX} {len(o.left_files)} other file(s) appeared in /dev/shm while it ran and are still there, {size} "
        f"({names}): of no kind shmdoctor knows (clean leaves them); if they are the command's, it did not remove them"
    ]


def to_text(o: Outcome) -> str:
    """Success: one line. Failure (or shared-memory warnings on the way): the diagnosis as explain gives it."""
    line = f"{PREFIX} {_status(o)}; {_peak(o)}"
    m = o.measured
    if o.exit_code == 0 and m is not None and m.size_bytes:
        headroom = max(0, m.size_bytes - m.peak_bytes)
        line += f", headroom {format_size(headroom)}"
        if m.peak_bytes >= m.size_bytes - FULL_SLACK:
            line += ": it filled /dev/shm and lived; give it more before it does not"
    need = o.explanation.report.requirement
    if need is not None:
        how = NEED_SOURCES.get(o.need_source or "")
        line += f"; the loaders' need {format_size(need.bytes)} ({need.formula}{', ' + how if how else ''})"
    lines = [*_loaders(o), line, *_leftovers(o), *_left_files(o)]
    if o.exit_code == 0 and not o.explanation.diagnoses:
        return "\n".join(lines)
    if not o.explanation.diagnoses:
        return "\n".join([*lines, f"{PREFIX} nothing in its stderr or its exit points to /dev/shm"])
    return "\n".join([*lines, explain.to_text(o.explanation)])


def to_json(o: Outcome) -> str:
    m = o.measured
    doc = {
        "schema": schema_id(o.kind),
        "command": o.command,
        "exit_code": o.exit_code,
        "duration_seconds": round(o.ended.elapsed, 3),
        "signals_forwarded": [signal.Signals(s).name for s in o.ended.forwarded],
        "peak_bytes": m.peak_bytes if m else None,
        "peak_t": round(m.peak_t, 3) if m else None,
        "start_used_bytes": m.start_bytes if m else None,
        "size_bytes": m.size_bytes if m else None,
        "memory_peak_bytes": m.memory_peak if m else None,
        "holders": [{"pid": h.pid, "command": h.command, "bytes": h.bytes} for h in o.holders],
        "stderr_bytes": o.stderr_bytes,
        "stderr_read": o.stderr_read,
        "instrumentation": None
        if o.instrumented is None
        else {
            "processes": len(o.instrumented.pids),
            "torch_processes": o.instrumented.torch_processes,
            "errors": list(o.instrumented.errors),
        },
        "loaders": [s.as_dict() for s in o.loaders],
        "need_source": o.need_source,
        "leftovers": None
        if o.leftovers is None
        else {
            "count": len(o.leftovers),
            "bytes": taken(o.leftovers),
            "names": [e.name for e in o.leftovers[:LEFTOVER_NAMES]],
            "clean": o.clean,
        },
        "left_files": {
            "count": len(o.left_files),
            "bytes": taken(o.left_files),
            "names": [f.name for f in o.left_files[:LEFTOVER_NAMES]],
        },
        "explanation": explain.document(o.explanation),
        "diagnoses": [d.as_dict() for d in o.explanation.diagnoses],
    }
    return json.dumps(doc, indent=2)
