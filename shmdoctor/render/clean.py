"""clean's document as text or JSON (shmdoctor/clean/1): what is leaked, what went, what stays and why."""

from __future__ import annotations

import json

from ..shm.removal import Cleaned
from ..shm.segments import Entry
from ..sizes import format_size
from . import schema_id

KEPT_SHOWN = 10


def _entry(e: Entry) -> dict:
    return {"name": e.name, "bytes": e.bytes, "kind": e.kind, **({"why": e.why} if e.why else {})}


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def to_json(doc: Cleaned) -> str:
    plan = doc.plan
    return json.dumps(
        {
            "schema": schema_id(doc.kind),
            "directory": doc.directory,
            "size_bytes": doc.size_bytes,
            "used_bytes": doc.used_bytes,
            "exclusive": doc.exclusive,
            "leaked": [_entry(e) for e in plan.leaked],
            "leaked_bytes": plan.leaked_bytes,
            "kept": [_entry(e) for e in plan.kept],
            "unrecognised": {"count": len(plan.unrecognised), "bytes": sum(f.bytes for f in plan.unrecognised)},
            "removed": [_entry(e) for e in doc.removed] if doc.yes else None,
            "freed_bytes": doc.freed_bytes,
            "failed": [{**_entry(e), "why": why} for e, why in doc.failed],
            "unreadable": list(doc.unreadable),
            "interrupted": doc.interrupted,
        },
        indent=2,
    )


def to_text(doc: Cleaned) -> str:
    plan = doc.plan
    out = [f"{doc.directory}: {format_size(doc.size_bytes)}, {format_size(doc.used_bytes)} used"]
    if not plan.leaked:
        out.append("Leaked: none")
    elif not doc.yes:
        leaked = _count(len(plan.leaked), "segment")
        out.append(f"Leaked: {leaked}, {format_size(plan.leaked_bytes)}, that no process holds")
        out += [f"  {e.name:<40} {format_size(e.bytes):>10}  {e.kind}" for e in plan.leaked]
    else:
        out.append(
            f"Freed {format_size(doc.freed_bytes)}: removed {len(doc.removed)} of "
            f"{_count(len(plan.leaked), 'leaked segment')}" + (" before the interrupt" if doc.interrupted else "")
        )
        out += [
            f"  removed {e.name:<40} {format_size(e.bytes):>10}  {e.kind}" + (f" ({e.why})" if e.why else "")
            for e in doc.removed
        ]
        out += [f"  kept    {e.name:<40} {format_size(e.bytes):>10}  could not remove: {why}" for e, why in doc.failed]
    for e in plan.kept[:KEPT_SHOWN]:
        out.append(f"Kept    {e.name}  {format_size(e.bytes)}: {e.why}")
    if len(plan.kept) > KEPT_SHOWN:
        out.append(f"Kept    {len(plan.kept) - KEPT_SHOWN} more in use (--format json lists them all)")
    if plan.unrecognised:
        n, total = len(plan.unrecognised), sum(f.bytes for f in plan.unrecognised)
        out.append(f"Left alone: {_count(n, 'file')} shmdoctor does not recognise ({format_size(total)})")
    if doc.unreadable:
        out.append(
            f"note: could not read {_count(len(doc.unreadable), 'process', 'processes')} "
            f"({'; '.join(doc.unreadable[:3])}): "
            "holders may be missing; removal stays safe (a kernel lease refuses any segment still open or mapped)"
        )
    if not doc.yes and plan.leaked:
        out.append(f"Nothing removed: `shmdoctor clean --yes` would free {format_size(plan.leaked_bytes)}.")
    return "\n".join(out)
