"""A DataLoader configuration, validated, and the /dev/shm it needs (FACTS.md: measured, not folklore).

Peak /dev/shm of one live iterator, b = one collated batch, page-rounded:
    (P·W + 1)·b  without pin_memory (the batch the loop holds is still a shared-memory segment)
    P·W·b        with pin_memory   (the pin thread copies it to page-locked memory and drops the segment)
    0            with num_workers=0 (batches never leave the process)
times the loaders in the container (DDP local ranks).
"""

from __future__ import annotations

import math

from .errors import UsageError
from .model import LoaderConfig, Requirement, Term
from .sizes import format_size, page_round, parse_size

DEFAULT_PREFETCH = 2


def loader_config(
    *,
    batch_size: int | None,
    num_workers: int | None = 0,
    prefetch_factor: int | None = None,
    sample_bytes: int | str | None = None,
    sample_tensors: tuple[float, ...] | None = None,
    batch_bytes: int | None = None,
    tensors_per_batch: int = 1,
    pin_memory: bool = False,
    ranks: int = 1,
) -> LoaderConfig:
    """Validates a loader as a user gives it; raises UsageError with a one-line message.

    The batch comes from sample_bytes (one tensor per sample), from sample_tensors (bytes per sample of each tensor
    a batch holds, as measured from a real dataset: each becomes its own page-rounded segment), or as batch_bytes.
    """
    if batch_size is None:
        raise UsageError("a loader needs --batch-size")
    num_workers = 0 if num_workers is None else num_workers
    for name, value, least in (("batch_size", batch_size, 1), ("num_workers", num_workers, 0), ("ranks", ranks, 1)):
        if not isinstance(value, int) or value < least:
            raise UsageError(f"{name} must be an integer of at least {least}, got {value!r}")
    if prefetch_factor is not None:
        if num_workers == 0:
            raise UsageError("prefetch_factor needs num_workers > 0 (PyTorch refuses it with num_workers=0)")
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise UsageError(f"prefetch_factor must be an integer of at least 1, got {prefetch_factor!r}")
    if sample_bytes is None and batch_bytes is None and sample_tensors is None:
        raise UsageError("a loader needs a sample size: --sample-bytes SIZE or --dataset MODULE:ATTR")
    sample = parse_size(sample_bytes, what="sample_bytes") if sample_bytes is not None else None
    if sample_tensors is not None:
        batch_bytes = sum(page_round(math.ceil(t * batch_size)) for t in sample_tensors)
        tensors_per_batch, sample = len(sample_tensors), math.ceil(sum(sample_tensors)) or None
    return LoaderConfig(
        batch_size=batch_size,
        num_workers=num_workers,
        prefetch_factor=(prefetch_factor or DEFAULT_PREFETCH) if num_workers else 0,
        pin_memory=bool(pin_memory),
        batch_bytes=batch_bytes if batch_bytes is not None else page_round(batch_size * sample),
        tensors_per_batch=tensors_per_batch,
        ranks=ranks,
        sample_bytes=sample,
    )


def batches_in_flight(num_workers: int, prefetch_factor: int, pin_memory: bool) -> int:
    """Collated batches alive in /dev/shm at the peak, for one loader."""
    if num_workers == 0:
        return 0
    return prefetch_factor * num_workers + (0 if pin_memory else 1)


def requirement(loader: LoaderConfig) -> Requirement:
    per_rank = batches_in_flight(loader.num_workers, loader.prefetch_factor, loader.pin_memory)
    total = per_rank * loader.batch_bytes * loader.ranks
    held = "" if loader.pin_memory else " + 1"
    formula = (
        "0: with num_workers=0 batches never leave the process"
        if not loader.num_workers
        else f"({loader.prefetch_factor}·{loader.num_workers}{held}) × {format_size(loader.batch_bytes)}"
        + (f" × {loader.ranks} ranks" if loader.ranks > 1 else "")
    )
    sample = f"{loader.batch_size} × {format_size(loader.sample_bytes)}" if loader.sample_bytes else "measured"
    terms = [
        Term("batch", f"{format_size(loader.batch_bytes)} ({sample}, page-rounded)"),
        Term("in flight", f"prefetch_factor {loader.prefetch_factor} × num_workers {loader.num_workers}"),
        Term(
            "held by the loop",
            "0 (pin_memory copies it out of /dev/shm)" if loader.pin_memory else "1 (the batch being trained on)",
        ),
        Term("ranks", loader.ranks),
        Term("total", total),
    ]
    return Requirement(bytes=total, loader=loader, batches_in_flight=per_rank, breakdown=tuple(terms), formula=formula)


def parse_loader_spec(spec: str) -> dict:
    """'batch_size=100,num_workers=4,sample_bytes=1MiB' (a label or an annotation) -> loader_config kwargs."""
    known = {"batch_size", "num_workers", "prefetch_factor", "sample_bytes", "pin_memory", "ranks"}
    out: dict = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            raise UsageError(f"loader spec {spec!r}: expected key=value with keys {', '.join(sorted(known))}")
        value = value.strip()
        if key == "sample_bytes":
            out[key] = value
        elif key == "pin_memory":
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise UsageError(f"loader spec {spec!r}: pin_memory must be true or false")
            out[key] = value.lower() in ("true", "1", "yes")
        else:
            try:
                out[key] = int(value)
            except ValueError:
                raise UsageError(f"loader spec {spec!r}: {key} must be an integer, got {value!r}") from None
    return out
