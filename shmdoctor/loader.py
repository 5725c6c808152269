"""A DataLoader configuration, validated, and the /dev/shm it needs (FACTS.md: measured, not folklore).

Peak /dev/shm of one live iterator, b = one collated batch, page-rounded:
    (P·W + 1)·b  without pin_memory (the batch the loop holds is still a shared-memory segment)
    P·W·b        with pin_memory   (the pin thread copies it to page-locked memory and drops the segment)
    0            with num_workers=0 (batches never leave the process)
times the loaders in the container (DDP local ranks).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, fields, replace

from .errors import UsageError
from .limits import MAX_BATCH, MAX_BYTES, MAX_PREFETCH, MAX_RANKS, MAX_WORKERS, bounded, shown
from .model import LoaderConfig, Need, Requirement, Value
from .sizes import format_size, page_round, parse_size

DEFAULT_PREFETCH = 2
# The label (a container's, a compose service's) or annotation (a workload's) that carries a target's own loader:
# "batch_size=100,num_workers=4,sample_bytes=1MiB".
LOADER_LABEL = "shmdoctor.loader"
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


@dataclass(frozen=True, eq=False, repr=False)
class LoaderSpec(Value):
    """A loader as a user gives it: on the command line, in a label or an annotation. A field is None where it was
    not given; config() fills PyTorch's defaults and validates the whole."""

    batch_size: int | None = None
    num_workers: int | None = None
    prefetch_factor: int | None = None
    sample_bytes: int | None = None
    sample_tensors: tuple[float, ...] | None = None  # measured from a Dataset: bytes per sample of each tensor
    pin_memory: bool | None = None
    ranks: int | None = None

    @classmethod
    def parse(cls, text: str) -> LoaderSpec:
        """'batch_size=100,num_workers=4,sample_bytes=1MiB' (a label or an annotation). UsageError, one line."""
        keys = sorted(f.name for f in fields(cls) if f.name != "sample_tensors")
        counts: dict[str, int] = {}
        sample_bytes: int | None = None
        pin_memory: bool | None = None
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key, value = key.strip().replace("-", "_"), value.strip()
            if not sep or key not in keys:
                raise UsageError(f"loader spec {shown(text)}: expected key=value with keys {', '.join(keys)}")
            if key == "sample_bytes":
                sample_bytes = parse_size(value, what="sample_bytes")
            elif key == "pin_memory":
                if value.lower() not in _TRUE + _FALSE:
                    raise UsageError(f"loader spec {shown(text)}: pin_memory must be true or false")
                pin_memory = value.lower() in _TRUE
            else:
                try:
                    counts[key] = int(value)
                except ValueError:
                    raise UsageError(
                        f"loader spec {shown(text)}: {key} must be an integer, got {shown(value)}"
                    ) from None
        return cls(
            batch_size=counts.get("batch_size"),
            num_workers=counts.get("num_workers"),
            prefetch_factor=counts.get("prefetch_factor"),
            sample_bytes=sample_bytes,
            pin_memory=pin_memory,
            ranks=counts.get("ranks"),
        )

    @property
    def given(self) -> bool:
        """Anything was given: a loader to judge (whole or not: config() says what is missing)."""
        return any(getattr(self, f.name) is not None for f in fields(self))

    def override(self, other: LoaderSpec) -> LoaderSpec:
        """This spec with other's given fields over it, key by key (a target's label over the command line).
        A sample size given replaces a measured one; num_workers=0 drops a prefetch_factor PyTorch would refuse."""
        given = {f.name: value for f in fields(other) if (value := getattr(other, f.name)) is not None}
        if other.sample_bytes is not None:
            given.setdefault("sample_tensors", None)
        if other.num_workers == 0:
            given.setdefault("prefetch_factor", None)
        return replace(self, **given)

    def config(self) -> LoaderConfig:
        """The loader, validated, with PyTorch's defaults where nothing was given. UsageError, one line."""
        return loader_config(
            batch_size=self.batch_size,
            num_workers=self.num_workers,
            prefetch_factor=self.prefetch_factor,
            sample_bytes=self.sample_bytes,
            sample_tensors=self.sample_tensors,
            pin_memory=bool(self.pin_memory),
            ranks=1 if self.ranks is None else self.ranks,
        )

    def requirement(self) -> Requirement | None:
        """What the loader needs of /dev/shm; None when no loader was given."""
        return requirement(self.config()) if self.given else None


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
    bounded("batch_size", batch_size, 1, MAX_BATCH)
    bounded("num_workers", num_workers, 0, MAX_WORKERS)
    bounded("ranks", ranks, 1, MAX_RANKS)
    if prefetch_factor is not None:
        if num_workers == 0:
            raise UsageError("prefetch_factor needs num_workers > 0 (PyTorch refuses it with num_workers=0)")
        bounded("prefetch_factor", prefetch_factor, 1, MAX_PREFETCH)
    sample = parse_size(sample_bytes, what="sample_bytes") if sample_bytes is not None else None
    if sample_tensors is not None:
        batch_bytes = sum(page_round(math.ceil(t * batch_size)) for t in sample_tensors)
        tensors_per_batch, sample = len(sample_tensors), math.ceil(sum(sample_tensors)) or None
    elif batch_bytes is None:
        if sample is None:
            raise UsageError("a loader needs a sample size: --sample-bytes SIZE or --dataset MODULE:ATTR")
        batch_bytes = page_round(batch_size * sample)
    if batch_bytes > MAX_BYTES:
        raise UsageError(
            f"one batch of {batch_size} samples is {format_size(batch_bytes)}, more than {format_size(MAX_BYTES)}: "
            "more memory than any machine has"
        )
    return LoaderConfig(
        batch_size=batch_size,
        num_workers=num_workers,
        prefetch_factor=(prefetch_factor or DEFAULT_PREFETCH) if num_workers else 0,
        pin_memory=bool(pin_memory),
        batch_bytes=batch_bytes,
        tensors_per_batch=tensors_per_batch,
        ranks=ranks,
        sample_bytes=sample,
    )


def batches_in_flight(num_workers: int, prefetch_factor: int, pin_memory: bool) -> int:
    """Collated batches alive in /dev/shm at the peak, for one loader."""
    if num_workers == 0:
        return 0
    return prefetch_factor * num_workers + (0 if pin_memory else 1)


def dataloader_need(loader: LoaderConfig) -> Need:
    """The DataLoader's term of the requirement."""
    total = batches_in_flight(loader.num_workers, loader.prefetch_factor, loader.pin_memory) * loader.batch_bytes
    held = "" if loader.pin_memory else " + 1"
    formula = (
        "0: with num_workers=0 batches never leave the process"
        if not loader.num_workers
        else f"({loader.prefetch_factor}·{loader.num_workers}{held}) × {format_size(loader.batch_bytes)}"
        + (f" × {loader.ranks} ranks" if loader.ranks > 1 else "")
    )
    return Need("dataloader", total * loader.ranks, formula)


def requirement(loader: LoaderConfig) -> Requirement:
    need = dataloader_need(loader)
    per_rank = batches_in_flight(loader.num_workers, loader.prefetch_factor, loader.pin_memory)
    return Requirement(
        bytes=need.bytes,
        loader=loader,
        batches_in_flight=per_rank,
        breakdown=(need,),
        formula=need.formula,
        ranks=loader.ranks,
    )


def combined_requirement(loaders: list[LoaderConfig], processes: int = 1) -> Requirement:
    """Several loaders at once: identical ones are one config times the ranks that run it, the others add up.
    The biggest is the one the report's loader settings speak of. The job's ranks: its loaders' or the processes
    seen running one, the more (a process whose loader was left out still has memory of its own)."""
    counts = Counter(replace(c, ranks=1) for c in loaders)
    groups = [replace(c, ranks=c.ranks * n) for c, n in counts.items()]
    needs = sorted((dataloader_need(c) for c in groups), key=lambda n: -n.bytes)
    biggest = max(groups, key=lambda c: dataloader_need(c).bytes)
    return Requirement(
        bytes=sum(n.bytes for n in needs),
        loader=biggest,
        batches_in_flight=batches_in_flight(biggest.num_workers, biggest.prefetch_factor, biggest.pin_memory),
        breakdown=tuple(needs),
        formula=" + ".join(n.formula for n in needs),
        ranks=max(processes, biggest.ranks),
    )


def inferred_requirement(batches: dict[int, int]) -> Requirement | None:
    """A DataLoader's need guessed from the segments its workers made (creator pid -> its biggest segment, as the
    names of PyTorch's segments tell): a worker per creator, the biggest segment a batch, PyTorch's default
    prefetch_factor and no pin_memory (the larger need of the two)."""
    if not batches or not max(batches.values()):
        return None
    workers, batch = len(batches), page_round(max(batches.values()))
    in_flight = batches_in_flight(workers, DEFAULT_PREFETCH, False)
    formula = (
        f"({DEFAULT_PREFETCH}·{workers} + 1) × {format_size(batch)}, inferred: {workers} worker(s) made segments of "
        f"up to {format_size(batch)}; prefetch_factor {DEFAULT_PREFETCH} (PyTorch's default), no pin_memory assumed"
    )
    need = Need("dataloader", in_flight * batch, formula)
    return Requirement(bytes=need.bytes, loader=None, batches_in_flight=in_flight, breakdown=(need,), formula=formula)
