"""The bench's findings, in the rule catalogue (rules.RULES) beside the facts' rules: each reads what a sweep measured
(BenchRun: the workload, the results, the facts) instead of a requirement. judge_bench() runs them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import capacity, fixes
from .bench.model import Result
from .bench.workload import BenchWorkload, memory_need, need
from .model import SEVERITY_RANK, Facts, Finding, Fix
from .rules import RULES, Hit, judge, rule
from .sizes import format_size


@dataclass(frozen=True)
class BenchRun:
    workload: BenchWorkload
    results: Sequence[Result]
    facts: Facts


@rule("bench-shm-exhausted", "error", "bench: configs ran out of shared memory", on="bench")
def shm_exhausted(run: BenchRun) -> Hit:
    """With the fixes the facts' rules give the most demanding config; never a /dev/shm smaller than this one."""
    workload, results, facts = run.workload, run.results, run.facts
    failed = [r for r in results if r.status == "shm-exhausted"]
    if not failed:
        return None
    available = capacity.available(facts)
    unfit = [
        r for r in results if r.status == "skipped" and available is not None and r.predicted_shm_bytes > available
    ]
    worst = max(failed + unfit, key=lambda r: r.predicted_shm_bytes)  # the fix covers the grid, not only what ran
    demand = need(workload, worst.config)
    report = judge(facts, demand)
    fixes_ = tuple(fx for f in report.findings if f.severity == "error" for fx in f.fixes)
    if not fixes_ and capacity.shm_size_for(demand.bytes, facts) > (facts.shm.size_bytes or 0):
        fixes_ = fixes.grow_shm(demand.bytes, facts, demand.ranks)  # only ever a larger /dev/shm than this one
    which = "; ".join(f"{r.config.label(workload.cuda)} ({r.message})" for r in failed)
    if unfit:
        which += f"; {len(unfit)} more predicted not to fit were not run"
    room = available is None or demand.bytes <= available * capacity.HEADROOM
    doubt = (
        ": by the formula it fits with room to spare, so look beyond /dev/shm too (a bus error from a "
        "memory-mapped file on a network volume reads the same)"
        if room and not fixes_
        else ""
    )
    return (
        f"{len(failed)} of {len(results)} configs ran out of shared memory: {which}. The most demanding needs "
        f"{format_size(demand.bytes)} of /dev/shm; {format_size(available)} is available{doubt}",
        fixes_,
    )


@rule("bench-out-of-memory", "error", "bench: configs were killed for memory, not for /dev/shm", on="bench")
def out_of_memory(run: BenchRun) -> Hit:
    killed = [r for r in run.results if r.status == "out-of-memory"]
    if not killed:
        return None
    which = "; ".join(
        f"{r.config.label(run.workload.cuda)} (needs {format_size(memory_need(run.workload, r.config))})"
        for r in killed
    )
    return (
        f"{len(killed)} of {len(run.results)} configs were killed for memory, not for /dev/shm: {which}. No "
        "memory limit counts the workers' /dev/shm pages here, or there were no workers",
        (Fix("fewer workers or a smaller --batch-size: /dev/shm is not what ran out"),),
    )


@rule("bench-error", "warning", "bench: configs failed for another reason", on="bench")
def failed_otherwise(run: BenchRun) -> Hit:
    errors = [r for r in run.results if r.status == "error"]
    if not errors:
        return None
    said = "; ".join(f"{r.config.label(run.workload.cuda)}: {r.message}" for r in errors)
    return f"{len(errors)} configs failed for another reason: {said}", ()


def judge_bench(workload: BenchWorkload, results: Sequence[Result], facts: Facts) -> tuple[Finding, ...]:
    """The bench rules' findings on one sweep, most severe first."""
    run = BenchRun(workload, tuple(results), facts)
    found = []
    for r in RULES:
        if r.on == "bench" and (hit := r.check(run)):
            message, fixes_ = hit
            found.append(Finding(r.id, r.severity, message, tuple(fixes_)))
    return tuple(sorted(found, key=lambda f: -SEVERITY_RANK[f.severity]))
