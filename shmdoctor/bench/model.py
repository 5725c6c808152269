"""The bench's currency: a config to run and what came of it. Plain frozen dataclasses, JSON-ready."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

Status = Literal["ok", "shm-exhausted", "out-of-memory", "error", "skipped"]


@dataclass(frozen=True)
class Config:
    num_workers: int
    prefetch_factor: int | None  # None with num_workers=0 (PyTorch refuses a prefetch_factor there)
    pin_memory: bool
    non_blocking: bool
    persistent_workers: bool = False  # workers kept between epochs (False with num_workers=0, as PyTorch requires)
    pin_memory_device: str | None = None  # passed to DataLoader (only with pin_memory); None: not passed

    @classmethod
    def of(cls, d: dict[str, Any]) -> Config:
        """The config in a result's or a recommendation's dict form (its other keys ignored)."""
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})

    def label(self, device_is_cuda: bool = True) -> str:
        text = f"num_workers={self.num_workers}"
        if self.prefetch_factor is not None:
            text += f", prefetch_factor={self.prefetch_factor}"
        if self.persistent_workers:
            text += ", persistent_workers=true"
        if device_is_cuda:
            text += f", pin_memory={str(self.pin_memory).lower()}, non_blocking={str(self.non_blocking).lower()}"
        if self.pin_memory_device is not None:
            text += f", pin_memory_device={self.pin_memory_device}"
        return text


@dataclass(frozen=True)
class Result:
    config: Config
    status: Status
    predicted_shm_bytes: int
    peak_shm_bytes: int | None = None  # statvfs peak during the run minus the baseline before it
    message: str = ""  # the error's telling line, for shm-exhausted and error
    batches: int = 0  # batches timed after the first
    stable: bool = False  # per-batch time settled before the budget or the data ran out
    batch_seconds: float | None = None  # one loop iteration (wait + copy + step), mean over the settled window
    data_wait_seconds: float | None = None  # blocked in next(), per batch
    h2d_seconds: float | None = None  # host-to-device copy per batch, CUDA events (None on the CPU)
    to_call_seconds: float | None = None  # host blocked in .to(device), per batch (what non_blocking changes)
    batch_bytes: int | None = None  # one batch as the loop received it
    worker_startup_seconds: float | None = None  # iter(loader): the worker processes started
    first_batch_seconds: float | None = None  # iter(loader) to the first batch in hand
    loop_seconds: float | None = None  # the whole measured loop, first batch included
    loader_overhead_bytes: int | None = None  # /dev/shm of the iterator itself (semaphores), not of batches
    next_epoch_start_seconds: float | None = None  # iter() again to its first batch: workers forked again, or not
    between_epochs_shm_bytes: int | None = None  # /dev/shm held from an epoch cut short to the next one's start
    h2d_pinned_bytes_per_second: float | None = None  # the transfer floor: pinned host-to-device copy, measured once
    pin_memory_device_ignored: bool | None = None  # torch warned it ignores pin_memory_device (None: not passed)
    wall_seconds: float | None = None  # the child process, interpreter and torch import included
    leftover_shm_bytes: int | None = None  # /dev/shm over the baseline once the child and its workers are gone
    removed_segments: tuple[str, ...] = ()  # torch_<pid>_* files of the dead child's processes, removed

    @property
    def batches_per_second(self) -> float | None:
        return 1 / self.batch_seconds if self.batch_seconds else None

    @property
    def peak_ratio(self) -> float | None:
        """The batches' peak against the prediction: the iterator's own pages (loader_overhead_bytes) left out."""
        if self.peak_shm_bytes is None or not self.predicted_shm_bytes:
            return None
        return max(0, self.peak_shm_bytes - (self.loader_overhead_bytes or 0)) / self.predicted_shm_bytes

    def to_dict(self, batch_size: int) -> dict[str, Any]:
        d = asdict(self.config)
        body = asdict(self)
        del body["config"]
        d.update(body)
        rate = self.batches_per_second
        d["removed_segments"] = list(self.removed_segments)
        d["batches_per_second"] = rate
        d["samples_per_second"] = rate * batch_size if rate else None
        d["bytes_per_second"] = rate * self.batch_bytes if rate and self.batch_bytes else None
        d["peak_to_predicted"] = self.peak_ratio
        return d
