"""A Report as JSON data: the body of check's document and of each report in audit's and lint's."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..model import Facts, Finding, Fix, Report, Target
from . import forms

_NAMES: dict[type, tuple[str, ...]] = {}  # each dataclass's field names, in order


def flat(obj: Any) -> dict[str, Any]:
    """A dataclass of plain values (strings, numbers, tuples and dicts of them) as a dict, its fields in order: what
    dataclasses.asdict gives for JSON, without its deep copy of every value (most of a 200-container audit's JSON)."""
    names = _NAMES.get(type(obj)) or _NAMES.setdefault(type(obj), tuple(f.name for f in fields(obj)))
    return {name: getattr(obj, name) for name in names}


def fix_dict(fix: Fix, facts: Facts) -> dict[str, Any]:
    """What a fix sets, then said in the target's own form (`form`, `text`; text null where that form has no such
    setting), as docker flags and as the run command of the target's engine (`command`, null where none makes it),
    and again under `compose` or `kubernetes` for a target defined there."""
    form = forms.form_of(facts)
    text = forms.block(fix, facts)
    return {
        **flat(fix),
        "env": dict(fix.env),
        "form": form,
        "text": text,
        "docker_args": list(forms.run_args(fix, facts)),
        "command": forms.command(fix, facts),
        "compose": text if form in ("compose", "swarm") and fix.sets else None,
        "kubernetes": text if form == "kubernetes" and fix.sets else None,
    }


def target_dict(target: Target) -> dict[str, Any]:
    return {
        **flat(target),
        "related": [flat(p) for p in target.related],
        "fix_at": flat(target.fix_at) if target.fix_at else None,
    }


def finding_dict(f: Finding, facts: Facts) -> dict[str, Any]:
    return {
        **flat(f),
        "fixes": [fix_dict(fix, facts) for fix in f.fixes],
        "suppressed": flat(f.suppressed) if f.suppressed else None,
    }


def report_dict(report: Report) -> dict[str, Any]:
    facts, need = report.facts, report.requirement
    return {
        "verdict": report.verdict,
        "target": target_dict(facts.target),
        "shm": flat(facts.shm),
        "ipc": flat(facts.ipc),
        "memory": flat(facts.memory),
        "runtime": facts.runtime,
        "nofile": facts.nofile,
        "cpus": facts.cpus,
        "gpus": facts.gpus,
        "requirement": None
        if need is None
        else {
            "bytes": need.bytes,
            "loader": flat(need.loader) if need.loader else None,
            "batches_in_flight": need.batches_in_flight,
            "formula": need.formula,
            "breakdown": [flat(t) for t in need.breakdown],
            "ranks": need.ranks,
            "nccl_fallback": need.nccl_fallback,
        },
        "findings": [finding_dict(f, facts) for f in report.findings],
        "notes": list(report.notes),
    }
