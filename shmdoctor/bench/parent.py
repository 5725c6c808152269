"""The parent's side of a sweep: each config the plan picks, forked by the zygote and watched through isolate.run,
its result as it ends."""

from __future__ import annotations

from collections.abc import Generator

from ..model import SHM
from . import isolate
from .model import Config, Result
from .plan import Plan
from .workload import BenchWorkload, job, need
from .zygote import Zygote

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
    "pin_memory_device_ignored",
)


def run_one(
    workload: BenchWorkload,
    config: Config,
    zygote: Zygote,
    memory_limited: bool,
    floor: bool = False,
    shm_path: str = SHM,
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


def sweep(workload: BenchWorkload, plan: Plan, zygote: Zygote, memory_limited: bool) -> Generator[Result, None, None]:
    """Each config's result as it ends, in the plan's order, forked by `zygote`, then a "skipped" result for each
    config the plan did not run. On CUDA the first config also measures the pinned host-to-device bandwidth."""
    floor = workload.cuda
    while (config := plan.next()) is not None:
        result = run_one(workload, config, zygote, memory_limited, floor=floor)
        floor = floor and result.h2d_pinned_bytes_per_second is None
        plan.record(result)
        yield result
    yield from plan.skipped(lambda c: need(workload, c).bytes)
