"""What a training script calls: preflight() judges its loader against this container's /dev/shm."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from .errors import InsufficientSharedMemoryError, UsageError
from .model import Report, Severity


def preflight(
    loader: Any = None,
    *,
    batch_size: int | None = None,
    num_workers: int = 0,
    prefetch_factor: int | None = None,
    sample_bytes: int | str | None = None,
    pin_memory: bool = False,
    ranks: int | None = None,
    fail_on: Severity = "error",
) -> Report:
    """Judge a loader against this container's /dev/shm before training starts.

    Give a torch DataLoader (its settings are read and a batch of its dataset is measured) or the settings.
    `ranks` defaults to LOCAL_WORLD_SIZE (set by torchrun), else 1. Returns the Report when the loader fits;
    raises InsufficientSharedMemoryError, whose message names the fix, when it does not.
    """
    from .loader import LoaderSpec, requirement
    from .probe import local
    from .rules import judge
    from .sizes import parse_size

    if ranks is None:
        env = os.environ.get("LOCAL_WORLD_SIZE", "1")
        if not (env.isascii() and env.isdigit()):
            raise UsageError("LOCAL_WORLD_SIZE is not a number of local ranks")
        ranks = int(env)
    if loader is not None:
        from .measure import loader_settings

        spec = replace(loader_settings(loader), ranks=ranks)
    else:
        spec = LoaderSpec(
            batch_size=batch_size,
            num_workers=num_workers,
            prefetch_factor=prefetch_factor,
            sample_bytes=None if sample_bytes is None else parse_size(sample_bytes, what="sample_bytes"),
            pin_memory=pin_memory,
            ranks=ranks,
        )
    report = judge(local.probe(), requirement(spec.config()), fail_on=fail_on)
    if report.verdict == "fail":
        raise InsufficientSharedMemoryError(report)
    return report
