"""Options shared by the commands that judge a loader (check, audit, lint), and their conversion to a Requirement."""

from __future__ import annotations

from typing import Any, Callable

import click

from .errors import UsageError
from .loader import loader_config, parse_loader_spec, requirement
from .model import Requirement

FORMATS = click.Choice(["text", "json"])


def loader_options(f: Callable) -> Callable:
    options = [
        click.option("--batch-size", type=int, help="Samples per batch."),
        click.option("--num-workers", type=int, help="DataLoader worker processes."),
        click.option("--prefetch-factor", type=int, help="Batches each worker loads ahead (PyTorch: 2)."),
        click.option("--sample-bytes", metavar="SIZE", help="Bytes of one sample: 1048576, 512k, 1MiB, 2g."),
        click.option("--dataset", metavar="MODULE:ATTR", help="Measure the sample from a real Dataset (needs torch)."),
        click.option("--pin-memory/--no-pin-memory", default=False, show_default=True, help="DataLoader pin_memory."),
        click.option(
            "--ranks", type=int, default=1, show_default=True, help="Loaders in the container (DDP local ranks)."
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def output_options(f: Callable) -> Callable:
    f = click.option(
        "--fail-on",
        type=click.Choice(["error", "warning"]),
        default="error",
        show_default=True,
        help="Lowest severity that makes the verdict fail (exit 1).",
    )(f)
    return click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")(f)


def loader_kwargs(batch_size, num_workers, prefetch_factor, sample_bytes, dataset, pin_memory, ranks) -> dict | None:
    """The loader options as given, or None when none was; a --dataset is measured here (torch imported)."""
    if all(v is None for v in (batch_size, num_workers, prefetch_factor, sample_bytes, dataset)) and (
        ranks == 1 and not pin_memory
    ):
        return None
    if dataset and sample_bytes:
        raise UsageError("give --sample-bytes or --dataset, not both")
    kwargs: dict[str, Any] = dict(
        batch_size=batch_size,
        num_workers=num_workers,
        prefetch_factor=prefetch_factor,
        sample_bytes=sample_bytes,
        pin_memory=pin_memory,
        ranks=ranks,
    )
    if dataset:
        if batch_size is None or batch_size < 1:
            raise UsageError("--dataset needs --batch-size of at least 1")
        from . import measure

        kwargs["sample_tensors"] = measure.sample_tensors(measure.load_dataset(dataset), batch_size, spec=dataset)
    return kwargs


def requirement_from(kwargs: dict | None, override: dict | None = None) -> Requirement | None:
    """kwargs from loader_kwargs, overridden key by key (a container's label, a workload's annotation)."""
    if kwargs is None and not override:
        return None
    merged = {**(kwargs or {}), **(override or {})}
    if override and "sample_bytes" in override:  # the label's sample size replaces the measured one
        merged.pop("sample_tensors", None)
    if override and override.get("num_workers") == 0:  # PyTorch refuses prefetch_factor without workers
        merged.pop("prefetch_factor", None)
    return requirement(loader_config(**merged))


def labelled_requirement(kwargs: dict | None, spec: str | None) -> tuple[Requirement | None, tuple[str, ...]]:
    """The command line's loader, overridden by a target's own shmdoctor.loader label or annotation, and a note
    that says so. A bad spec raises UsageError: each command decides what that means for its target."""
    if not spec:
        return requirement_from(kwargs), ()
    return requirement_from(kwargs, parse_loader_spec(spec)), (f"loader from its shmdoctor.loader label: {spec}",)
