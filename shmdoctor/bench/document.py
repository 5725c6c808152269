"""The bench's outcome as one document (schema shmdoctor/bench/1, render/schemas/bench.json): what the renderers
(render/bench.py) print, and what a saved JSON renders back from. Pure: results in, a document out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .. import capacity, fixes
from ..model import Facts, Finding
from ..render.forms import run_args
from ..render.json import finding_dict as _finding
from ..sizes import docker_size
from .model import Result
from .sweep import Recommendation
from .workload import BenchWorkload, need

SCHEMA = "shmdoctor/bench/1"


@dataclass(frozen=True)
class BenchDocument:
    """The document of one sweep: its JSON body, as document() builds it or a saved JSON holds it."""

    kind: ClassVar[str] = "bench"
    body: dict[str, Any]


def _config(r: Result) -> dict[str, Any]:
    c = r.config
    return {
        "num_workers": c.num_workers,
        "prefetch_factor": c.prefetch_factor,
        "pin_memory": c.pin_memory,
        "non_blocking": c.non_blocking,
        "persistent_workers": c.persistent_workers,
        "pin_memory_device": c.pin_memory_device,
        "batch_seconds": r.batch_seconds,
        "predicted_shm_bytes": r.predicted_shm_bytes,
    }


def recommendation_dict(rec: Recommendation | None, workload: BenchWorkload, facts: Facts) -> dict[str, Any] | None:
    if rec is None:
        return None
    best = {**_config(rec.best), "fits": rec.best_fits}
    if not rec.best_fits:  # what it takes: more memory where the limit binds, else a larger /dev/shm, never less
        demand = need(workload, rec.best.config)
        size = capacity.shm_size_for(demand.bytes, facts)
        if capacity.memory_binds(facts) or size <= (facts.shm.size_bytes or 0):
            best.update(docker_args=list(run_args(fixes.grow_memory(demand.bytes, facts, demand.ranks), facts)))
        else:
            best.update(shm_size_bytes=size, docker_args=[f"--shm-size={docker_size(size)}"])
    return {
        **_config(rec.choice),
        "tolerance": rec.tolerance,
        "available_shm_bytes": rec.capacity,
        "best_fitting": _config(rec.best_fit),
        "best": best,
        "within_noise": [_config(r) for r in rec.alike],
    }


def document(
    workload: BenchWorkload,
    results: Sequence[Result],
    rec: Recommendation | None,
    findings: Sequence[Finding],
    facts: Facts,
    device: dict[str, Any],
) -> dict[str, Any]:
    verdict = "fail" if any(f.severity == "error" for f in findings) else ("warn" if findings else "ok")
    return {
        "schema": SCHEMA,
        "verdict": verdict,
        "device": {
            **device,
            "h2d_pinned_bytes_per_second": next(
                (r.h2d_pinned_bytes_per_second for r in results if r.h2d_pinned_bytes_per_second), None
            ),
        },
        "workload": {
            "dataset": workload.dataset or "synthetic",
            "batch_size": workload.batch_size,
            "sample_bytes": workload.sample_bytes,
            "batch_bytes": workload.batch_bytes,
            "item_latency_seconds": workload.item_latency,
            "step_time_seconds": workload.step_time,
            "batches": workload.batches,
            "budget_seconds": workload.budget,
        },
        "shm": {
            "size_bytes": facts.shm.size_bytes,
            "free_bytes": facts.shm.free_bytes,
            "available_bytes": capacity.available(facts),
        },
        "results": [r.to_dict(workload.batch_size) for r in results],
        "recommendation": recommendation_dict(rec, workload, facts),
        "findings": [_finding(f, facts) for f in findings],
    }
