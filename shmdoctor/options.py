"""Options shared by the commands that judge a loader (check, audit, lint, watch), read into a LoaderSpec."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import click

from . import render
from .errors import UsageError
from .loader import LoaderSpec
from .numbers import INT
from .sizes import parse_size
from .workload import CONSUMER_KEYS, Consumers, Workload

FORMATS = click.Choice(list(render.FORMATS))  # the formats every document renders to


def loader_options(f: Callable) -> Callable:
    options = [
        click.option("--batch-size", type=INT, help="Samples per batch."),
        click.option("--num-workers", type=INT, help="DataLoader worker processes."),
        click.option("--prefetch-factor", type=INT, help="Batches each worker loads ahead (PyTorch: 2)."),
        click.option("--sample-bytes", metavar="SIZE", help="Bytes of one sample: 1048576, 512k, 1MiB, 2g."),
        click.option("--dataset", metavar="MODULE:ATTR", help="Measure the sample from a real Dataset (needs torch)."),
        click.option("--pin-memory/--no-pin-memory", default=False, show_default=True, help="DataLoader pin_memory."),
        click.option(
            "--ranks", type=INT, default=1, show_default=True, help="Loaders in the container (DDP local ranks)."
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def output_options(kind: str) -> Callable[[Callable], Callable]:
    """--format (the formats `kind`'s document renders to) and --fail-on."""

    def add(f: Callable) -> Callable:
        f = click.option(
            "--fail-on",
            type=click.Choice(["error", "warning"]),
            default="error",
            show_default=True,
            help="Lowest severity that makes the verdict fail (exit 1).",
        )(f)
        formats = click.Choice(list(render.formats(kind)))
        return click.option("--format", "fmt", type=formats, default="text", show_default=True, help="Output format.")(
            f
        )

    return add


def loader_spec(
    batch_size: int | None,
    num_workers: int | None,
    prefetch_factor: int | None,
    sample_bytes: str | int | None,
    dataset: str | None,
    pin_memory: bool,
    ranks: int,
) -> LoaderSpec:
    """The loader options as given (PyTorch's defaults, --no-pin-memory and --ranks 1, count as not given);
    a --dataset is measured here (torch imported)."""
    if dataset and sample_bytes:
        raise UsageError("give --sample-bytes or --dataset, not both")
    spec = LoaderSpec(
        batch_size=batch_size,
        num_workers=num_workers,
        prefetch_factor=prefetch_factor,
        sample_bytes=parse_size(sample_bytes, what="sample_bytes") if sample_bytes is not None else None,
        pin_memory=pin_memory or None,
        ranks=None if ranks == 1 else ranks,
    )
    if not dataset:
        return spec
    if batch_size is None or batch_size < 1:
        raise UsageError("--dataset needs --batch-size of at least 1")
    from . import measure

    return replace(spec, sample_tensors=measure.sample_tensors(measure.load_dataset(dataset), batch_size, spec=dataset))


def consumer_options(f: Callable) -> Callable:
    """The consumers of /dev/shm beside the DataLoader (check, audit, lint)."""
    options = [
        click.option("--gpus", type=INT, help="Local GPUs that talk through NCCL [detected: LOCAL_WORLD_SIZE, ...]."),
        click.option(
            "--nccl",
            type=click.Choice(["auto", "shm", "p2p", "off"]),
            help="NCCL's transport between local GPUs [auto: P2P, warning if /dev/shm could not hold the fallback].",
        ),
        click.option("--all-to-all", is_flag=True, default=None, help="The job uses all-to-all (send/recv) in NCCL."),
        click.option("--nodes", type=INT, help="Nodes the job spans (NCCL's proxy pool per rank)."),
        click.option("--serve", type=click.Choice(["vllm", "sglang"]), help="An inference server's broadcast rings."),
        click.option("--tensor-parallel-size", type=INT, help="The server's tensor parallel size [--gpus]."),
        click.option("--ray-object-store", metavar="auto|SIZE", help="Ray's object store: auto (30% of memory), SIZE."),
        click.option("--triton-instances", type=INT, help="Triton python-backend model instances."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def selection_option(f: Callable) -> Callable:
    """--workload NAME: the targets the loader and consumer options apply to."""
    return click.option(
        "--workload",
        "names",
        multiple=True,
        metavar="NAME",
        help="Apply the loader and consumer options to this target only (repeatable; a service, a workload, a "
        "container, a script's line, or a shell pattern: '*' is every one). Default: those that look like they use "
        "/dev/shm (an ML image or command, GPUs, an inference server), or all when none does.",
    )(f)


def workload(**given: Any) -> Workload:
    """The loader options and the consumer options as given, in one Workload."""
    pairs = {k: given.pop(k) for k in CONSUMER_KEYS if k in given}
    store = pairs.get("ray_object_store")
    if store is not None:
        pairs["ray_object_store"] = (
            "auto" if store.strip().lower() == "auto" else parse_size(store, what="--ray-object-store")
        )
    return Workload(loader_spec(**given), Consumers(**{k: v for k, v in pairs.items() if v is not None}))
