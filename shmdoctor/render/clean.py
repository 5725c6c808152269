"""clean's outcome as text or as one JSON document: what is leaked, what went, what stays and why."""

from __future__ import annotations

import json

from ..model import SCHEMA
from ..segments import Entry
from ..sizes import format_size

KEPT_SHOWN = 10


def _entry(e: Entry) -> dict:
    return {"name": e.name, "bytes": e.bytes, "kind": e.kind, **({"why": e.why} if e.why else {})}


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def render_json(*, directory, size, used, plan, yes, removed, failed, unreadable, interrupted) -> str:
    return json.dumps(
        {
            "schema": SCHEMA,
            "directory": directory,
            "size_bytes": size,
            "used_bytes": used,
            "leaked": [_entry(e) for e in plan.leaked],
            "leaked_bytes": plan.leaked_bytes,
            "kept": [_entry(e) for e in plan.kept],
            "unrecognised": {"count": len(plan.unrecognised), "bytes": sum(f.bytes for f in plan.unrecognised)},
            "removed": [_entry(e) for e in removed] if yes else None,
            "freed_bytes": sum(e.bytes for e in removed) if yes else 0,
            "failed": [{**_entry(e), "why": why} for e, why in failed],
            "unreadable": list(unreadable),
            "interrupted": interrupted,
        },
        indent=2,
    )


def render_text(*, directory, size, used, plan, yes, removed, failed, unreadable, interrupted) -> str:
    out = [f"{directory}: {format_size(size)}, {format_size(used)} used"]
    if not plan.leaked:
        out.append("Leaked: none")
    elif not yes:
        n = _count(len(plan.leaked), "segment")
        out.append(f"Leaked: {n}, {format_size(plan.leaked_bytes)}, that no process holds")
        out += [f"  {e.name:<40} {format_size(e.bytes):>10}  {e.kind}" for e in plan.leaked]
    else:
        freed = sum(e.bytes for e in removed)
        out.append(
            f"Freed {format_size(freed)}: removed {len(removed)} of {_count(len(plan.leaked), 'leaked segment')}"
            + (" before the interrupt" if interrupted else "")
        )
        out += [f"  removed {e.name:<40} {format_size(e.bytes):>10}  {e.kind}" for e in removed]
        out += [f"  kept    {e.name:<40} {format_size(e.bytes):>10}  could not remove: {why}" for e, why in failed]
    for e in plan.kept[:KEPT_SHOWN]:
        out.append(f"Kept    {e.name}  {format_size(e.bytes)}: {e.why}")
    if len(plan.kept) > KEPT_SHOWN:
        out.append(f"Kept    {len(plan.kept) - KEPT_SHOWN} more in use (--format json lists them all)")
    if plan.unrecognised:
        n, total = len(plan.unrecognised), sum(f.bytes for f in plan.unrecognised)
        out.append(f"Left alone: {_count(n, 'file')} shmdoctor does not recognise ({format_size(total)})")
    if unreadable:
        out.append(
            f"note: could not read {_count(len(unreadable), 'process', 'processes')} ({'; '.join(unreadable[:3])}): "
            "holders may be missing; removal stays safe (a kernel lease refuses any segment still open or mapped)"
        )
    if not yes and plan.leaked:
        out.append(f"Nothing removed: `shmdoctor clean --yes` would free {format_size(plan.leaked_bytes)}.")
    return "\n".join(out)
