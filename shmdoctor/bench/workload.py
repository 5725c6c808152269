"""What a bench measures and predicts: the workload, each config's /dev/shm and memory need, whether the sweep may
start at all, and the job a config's child reads. Pure: no process, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..loader import loader_config, requirement
from ..model import Requirement
from ..sizes import format_size
from .model import Config

DEFAULT_BUDGET = 60.0


@dataclass(frozen=True)
class BenchWorkload:
    """What one bench run loads and how: the batch, the dataset, the step; not to be confused with
    shmdoctor.workload.Workload, a workload's consumers of /dev/shm as check judges them."""

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


def need(workload: BenchWorkload, config: Config) -> Requirement:
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


def memory_need(workload: BenchWorkload, config: Config) -> int:
    """The least memory a config takes, /dev/shm included (tmpfs pages are memory, charged to a memory cgroup): its
    batches in /dev/shm, the batch the process builds itself (no workers) or copies into page-locked memory
    (pin_memory on CUDA), and each process's sample."""
    own = workload.batch_bytes if not config.num_workers or (config.pin_memory and workload.cuda) else 0
    return need(workload, config).bytes + own + (workload.sample_bytes or 0) * (config.num_workers + 1)


def refusal(workload: BenchWorkload, configs: Sequence[Config], host_available: int, room: int | None) -> str | None:
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


def job(workload: BenchWorkload, config: Config) -> dict:
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
        "pin_memory_device": config.pin_memory_device,
        "next_epoch": workload.next_epoch and config.num_workers > 0,
    }
