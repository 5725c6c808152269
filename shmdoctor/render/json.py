"""A Report as JSON data: the body of check's document and of each report in audit's and lint's."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..model import Facts, Finding, Fix, Report
from . import forms


def fix_dict(fix: Fix, facts: Facts) -> dict[str, Any]:
    """What a fix sets, then said in the target's own form (`form`, `text`; text null where that form has no such
    setting), as docker flags and as the run command of the target's engine (`command`, null where none makes it),
    and again under `compose` or `kubernetes` for a target defined there."""
    form = forms.form_of(facts)
    text = forms.block(fix, facts)
    return {
        **asdict(fix),
        "env": dict(fix.env),
        "form": form,
        "text": text,
        "docker_args": list(forms.run_args(fix, facts)),
        "command": forms.command(fix, facts),
        "compose": text if form in ("compose", "swarm") and fix.sets else None,
        "kubernetes": text if form == "kubernetes" and fix.sets else None,
    }


def finding_dict(f: Finding, facts: Facts) -> dict[str, Any]:
    return {**asdict(f), "fixes": [fix_dict(fix, facts) for fix in f.fixes]}


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
        "findings": [finding_dict(f, facts) for f in report.findings],
        "notes": list(report.notes),
    }
