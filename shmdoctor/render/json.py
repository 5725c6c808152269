"""The JSON contract, schema shmdoctor/1: one document on stdout."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..model import SCHEMA, Finding, Report, worst_verdict


def _finding(f: Finding) -> dict[str, Any]:
    d = asdict(f)
    d["fixes"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(fix).items()} for fix in f.fixes]
    return d


def report_dict(report: Report) -> dict[str, Any]:
    facts, need = report.facts, report.requirement
    return {
        "schema": SCHEMA,
        "verdict": report.verdict,
        "target": asdict(facts.target),
        "shm": asdict(facts.shm),
        "ipc": asdict(facts.ipc),
        "memory": asdict(facts.memory),
        "runtime": facts.runtime,
        "nofile": facts.nofile,
        "cpus": facts.cpus,
        "gpus": facts.gpus,
        "requirement": None
        if need is None
        else {
            "bytes": need.bytes,
            "loader": asdict(need.loader),
            "batches_in_flight": need.batches_in_flight,
            "formula": need.formula,
            "breakdown": [asdict(t) for t in need.breakdown],
        },
        "findings": [_finding(f) for f in report.findings],
        "notes": list(report.notes),
    }


def render(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2)


def render_many(reports: list[Report], **extra: Any) -> str:
    """audit and lint: {"schema", "verdict": <worst>, "reports": [...], ...extra}."""
    doc = {"schema": SCHEMA, "verdict": worst_verdict([r.verdict for r in reports]), **extra}
    doc["reports"] = [report_dict(r) for r in reports]
    return json.dumps(doc, indent=2)
