"""The sweep itself: each config through isolate.run, its prediction from the core's formula, and the findings."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass

from .. import capacity, fixes
from ..loader import loader_config, requirement
from ..model import SHM, Facts, Finding, Fix, Requirement
from ..rules import judge
from ..sizes import format_size
from . import isolate
from .model import Config, Result
from .plan import Plan
from .zygote import Zygote

DEFAULT_BUDGET = 60.0


@dataclass(frozen=True)
class Workload:
    batch_size: int
    batch_bytes: int  # one collated batch, page-rounded per tensor (the core's figure)
    sample_bytes: int | None
    tensors_per_batch: int = 1
    dataset: str | None = None  # MODULE:ATTR; None: the synthetic dataset
    item_latency: float = 0.0
    step_time: float = 0.0
    batches: int | None = None  # a fixed count of timed batches instead of the settle rule
    budget: float = DEFAULT_BUDGET  # seconds of loop per config, at most
    device: str = "cpu"
    next_epoch: bool = False  # time a second epoch's start too (persistent_workers is in the grid)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


def need(workload: Workload, config: Config) -> Requirement:
    """The core's prediction. pin_memory only takes effect with CUDA: on the CPU the batch stays in /dev/shm."""
    return requirement(
        loader_config(
            batch_size=workload.batch_size,
            num_workers=config.num_workers,
            prefetch_factor=config.prefetch_factor,
            sample_bytes=workload.sample_bytes,
            batch_bytes=workload.batch_bytes,
            tensors_per_batch=workload.tensors_per_batch,
            pin_memory=config.pin_memory and workload.cuda,
        )
    )


def memory_need(workload: Workload, config: Config) -> int:
    """The least memory a config takes, /dev/shm included (tmpfs pages are memory, charged to a memory cgroup): its
    batches in /dev/shm, the batch the process builds itself (no workers) or copies into page-locked memory
    (pin_memory on CUDA), and each process's sample."""
    own = workload.batch_bytes if not config.num_workers or (config.pin_memory and workload.cuda) else 0
    return need(workload, config).bytes + own + (workload.sample_bytes or 0) * (config.num_workers + 1)


def refusal(workload: Workload, configs: Sequence[Config], host_available: int, room: int | None) -> str | None:
    """Why the sweep must not start, or None. A batch larger than the memory here (the machine's available memory,
    or the memory limit's room when lower) can never run; a config that needs more than the machine has available
    would set off the machine's OOM killer, which may pick any process. Under a memory limit the kill stays inside
    the limit: such a config runs, and its end is the measured proof that the limit cannot hold it."""
    least = min(c for c in (host_available, room) if c is not None)
    if workload.batch_bytes > least:
        sample = f"{workload.batch_size} × {format_size(workload.sample_bytes)}, " if workload.sample_bytes else ""
        return (
            f"one batch is {format_size(workload.batch_bytes)} ({sample}--batch-size {workload.batch_size}): more "
            f"than the {format_size(least)} of memory available here; nothing was run"
        )
    for config in configs:
        needed = memory_need(workload, config)
        if needed > host_available:
            return (
                f"{config.label(workload.cuda)} needs at least {format_size(needed)} of memory (its /dev/shm batches "
                f"included); this machine has {format_size(host_available)} available, and running it would set off "
                "the machine's OOM killer: nothing was run. Drop that config, or lower --batch-size"
            )
    return None


def job(workload: Workload, config: Config) -> dict:
    return {
        "device": workload.device,
        "dataset": workload.dataset,
        "sample_bytes": workload.sample_bytes,
        "item_latency": workload.item_latency,
        "batch_size": workload.batch_size,
        "batch_bytes": workload.batch_bytes,
        "step_time": workload.step_time,
        "batches": workload.batches,
        "budget": workload.budget,
        "num_workers": config.num_workers,
        "prefetch_factor": config.prefetch_factor,
        "pin_memory": config.pin_memory,
        "non_blocking": config.non_blocking,
        "persistent_workers": config.persistent_workers,
        "next_epoch": workload.next_epoch and config.num_workers > 0,
    }


MEASURED = (
    "batches",
    "stable",
    "batch_seconds",
    "data_wait_seconds",
    "h2d_seconds",
    "to_call_seconds",
    "batch_bytes",
    "worker_startup_seconds",
    "first_batch_seconds",
    "loop_seconds",
    "loader_overhead_bytes",
    "next_epoch_start_seconds",
    "between_epochs_shm_bytes",
    "h2d_pinned_bytes_per_second",
)


def run_one(
    workload: Workload, config: Config, zygote: Zygote, memory_limited: bool, floor: bool = False, shm_path: str = SHM
) -> Result:
    out = isolate.run(
        {**job(workload, config), "h2d_floor": floor},
        timeout=workload.budget + isolate.GRACE,
        zygote=zygote,
        shm_charged=memory_limited and config.num_workers > 0,
        shm_path=shm_path,
    )
    ok = out.status == "ok"
    return Result(
        config=config,
        status=out.status,  # type: ignore[arg-type]
        predicted_shm_bytes=need(workload, config).bytes,
        peak_shm_bytes=out.peak_shm_bytes,
        message=out.message,
        wall_seconds=out.wall_seconds,
        leftover_shm_bytes=out.leftover_shm_bytes,
        removed_segments=out.removed_segments,
        **{k: out.measured[k] for k in MEASURED if ok and k in out.measured},
    )


def sweep(workload: Workload, plan: Plan, zygote: Zygote, memory_limited: bool) -> Generator[Result, None, None]:
    """Each config's result as it ends, in the plan's order, forked by `zygote`, then a "skipped" result for each
    config the plan did not run. On CUDA the first config also measures the pinned host-to-device bandwidth."""
    floor = workload.cuda
    while (config := plan.next()) is not None:
        result = run_one(workload, config, zygote, memory_limited, floor=floor)
        floor = floor and result.h2d_pinned_bytes_per_second is None
        plan.record(result)
        yield result
    yield from plan.skipped(lambda c: need(workload, c).bytes)


def findings(workload: Workload, results: Sequence[Result], facts: Facts) -> tuple[Finding, ...]:
    """One error finding when configs ran out of shared memory, with the fixes the rules give the most demanding."""
    failed = [r for r in results if r.status == "shm-exhausted"]
    out = []
    if failed:
        worst = max(failed, key=lambda r: r.predicted_shm_bytes)
        demand = need(workload, worst.config)
        report = judge(facts, demand)
        fixes_ = tuple(fx for f in report.findings if f.severity == "error" for fx in f.fixes)
        if not fixes_ and capacity.shm_size_for(demand.bytes, facts) > (facts.shm.size_bytes or 0):
            fixes_ = fixes.grow_shm(demand, facts)  # only ever a larger /dev/shm than this one
        which = "; ".join(f"{r.config.label(workload.cuda)} ({r.message})" for r in failed)
        available = capacity.available(facts)
        room = available is None or demand.bytes <= available * capacity.HEADROOM
        doubt = (
            ": by the formula it fits with room to spare, so look beyond /dev/shm too (a bus error from a "
            "memory-mapped file on a network volume reads the same)"
            if room and not fixes_
            else ""
        )
        out.append(
            Finding(
                "bench-shm-exhausted",
                "error",
                f"{len(failed)} of {len(results)} configs ran out of shared memory: {which}. The most demanding needs "
                f"{format_size(demand.bytes)} of /dev/shm; {format_size(available)} is available{doubt}",
                fixes_,
            )
        )
    killed = [r for r in results if r.status == "out-of-memory"]
    if killed:
        which = "; ".join(
            f"{r.config.label(workload.cuda)} (needs {format_size(memory_need(workload, r.config))})" for r in killed
        )
        out.append(
            Finding(
                "bench-out-of-memory",
                "error",
                f"{len(killed)} of {len(results)} configs were killed for memory, not for /dev/shm: {which}. No "
                "memory limit counts the workers' /dev/shm pages here, or there were no workers",
                (Fix("fewer workers or a smaller --batch-size: /dev/shm is not what ran out"),),
            )
        )
    errors = [r for r in results if r.status == "error"]
    if errors:
        out.append(
            Finding(
                "bench-error",
                "warning",
                f"{len(errors)} configs failed for another reason: "
                + "; ".join(f"{r.config.label(workload.cuda)}: {r.message}" for r in errors),
            )
        )
    return tuple(out)
