"""A Report as JSON data: the body of check's document and of each report in audit's and lint's."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..model import Finding, Report


def finding_dict(f: Finding) -> dict[str, Any]:
    d = asdict(f)
    d["fixes"] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(fix).items()} for fix in f.fixes]
    return d


def report_dict(report: Report) -> dict[str, Any]:
    facts, need = report.facts, report.requirement
    return {
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
            "loader": asdict(need.loader) if need.loader else None,
            "batches_in_flight": need.batches_in_flight,
            "formula": need.formula,
            "breakdown": [asdict(t) for t in need.breakdown],
            "ranks": need.ranks,
            "nccl_fallback": need.nccl_fallback,
        },
        "findings": [finding_dict(f) for f in report.findings],
        "notes": list(report.notes),
    }
