"""explain's report (schema shmdoctor/explain/2): the verdict with the cause first, the fix, each diagnosis with its
line and excerpt (the matched line only), then the facts it was weighed against."""

from __future__ import annotations

import json

from ..diagnose import BY_ID, SHM_CAUSES, SIGNATURES, Explanation
from ..diagnose.place import here
from ..sizes import format_size
from . import schema_id, text
from .json import report_dict


def headline(ex: Explanation) -> str:
    top = next((f for f in ex.report.findings if f.severity == "error"), None)
    if top is not None:
        d = next(d for d in ex.diagnoses if d.signature == top.id and d.cause in SHM_CAUSES)
        return f"{d.cause} ({d.consumer}): {top.message}"
    if ex.diagnoses:
        return ex.report.findings[0].message
    return (
        f"no shared-memory failure recognised in {ex.source}: none of the {len(SIGNATURES)} known failure texts is "
        "there, and no errno or signal of the family beside a shared-memory context (which is no proof it was not: "
        "`shmdoctor run -- CMD` measures the job itself)"
    )


def _diagnosis_lines(ex: Explanation) -> list[str]:
    out = ["\nDiagnoses"]
    for d in ex.diagnoses:  # one a signature and cause: each cause shown, every line it matched counted
        where = f"line {d.line}" if d.line else "exit"
        if d.count > 1:
            where += f" and {d.count - 1} more"
        need = f"  needs {format_size(d.bytes_needed)}" if d.bytes_needed else ""
        out.append(f"  {d.cause:<13}{d.consumer:<18}{d.signature:<30}{where}{need}")
        out.append(f"      {d.excerpt}")
        if d.reason:
            out.append(f"      {'not shared memory: ' if d.cause == 'not-shm' else ''}{d.reason}")
        if d.evidence:
            out.append(f"      {'read with' if d.found_by == 'reader' else 'consumer:'} {d.evidence}")
        out.append(f"      ({'read by' if d.found_by == 'reader' else 'text from'} {BY_ID[d.signature].source})")
    return out


def to_text(ex: Explanation) -> str:
    report = ex.report
    # a text that names nothing is not recognised, never OK (exit 0 and the JSON's verdict ok: no finding)
    label = "FAIL" if ex.exit_code else "WARN" if _undecided(ex) else "OK" if ex.diagnoses else "NOT RECOGNISED"
    color = {"FAIL": "red", "WARN": "yellow", "OK": "green", "NOT RECOGNISED": "yellow"}[label]
    out = [f"{text.style(label, color, bold=True)}  {headline(ex)}"]
    failing = ex.exit_code != 0  # a failure's fixes; else what a finding that is not /dev/shm offers
    top = next((f for f in report.findings if f.fixes and (f.severity == "error" or not failing)), None)
    if top:
        out.append("")
        out.extend(text.fix_lines(list(top.fixes), report.facts))
    if ex.diagnoses:
        out.extend(_diagnosis_lines(ex))
    if ex.place is None or ex.place.here:
        out.extend(text.facts_lines(report))
    else:  # a place elsewhere has no facts but what was said of it
        out.append(f"\nWhere it ran   {ex.place.known}: {ex.place.said}")
    out.extend(f"note: {note}" for note in report.notes)
    return "\n".join(out)


def _undecided(ex: Explanation) -> bool:
    """Nothing shared-memory stands, but a text stays ambiguous (a bare NCCL system error): said how to tell."""
    return any(d.cause == "ambiguous" for d in ex.diagnoses)


def document(ex: Explanation) -> dict:
    doc = {"schema": schema_id(ex.kind), **report_dict(ex.report)}
    doc["verdict"] = "fail" if ex.exit_code else "warn" if _undecided(ex) else "ok"
    doc["source"] = ex.source
    doc["exit_code"] = None if ex.exit is None else ex.exit.code
    doc["oom_killed"] = None if ex.exit is None else ex.exit.oom_killed
    doc["place"] = (ex.place or here(ex.report.facts)).as_dict()
    doc["diagnoses"] = [d.as_dict() for d in ex.diagnoses]
    return doc


def to_json(ex: Explanation) -> str:
    return json.dumps(document(ex), indent=2)
