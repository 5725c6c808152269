"""shmdoctor bench: sweep DataLoader settings in isolated runs, measure /dev/shm against the prediction, recommend."""

from __future__ import annotations

import click

from ..errors import UsageError
from ..exits import ExitCode
from ..options import FORMATS, loader_spec
from ..sizes import parse_size

TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def int_list(text: str, what: str, least: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{what}: expected a comma list of integers, e.g. 0,1,2,4; got {text!r}") from None
    if not values or min(values) < least:
        raise UsageError(f"{what}: expected integers of at least {least}, got {text!r}")
    return list(dict.fromkeys(values))


def bool_list(text: str, what: str) -> list[bool]:
    values = [v.strip().lower() for v in text.split(",") if v.strip()]
    if not values or any(v not in TRUE + FALSE for v in values):
        raise UsageError(f"{what}: expected a comma list of true/false, got {text!r}")
    return list(dict.fromkeys(v in TRUE for v in values))


def resolve_device(name: str) -> tuple[str, dict]:
    """auto | cpu | cuda | cuda:N -> (torch device string, what the JSON says about it). Imports torch."""
    name = name.strip().lower()
    name = "cuda:0" if name == "cuda" else name
    index = name.partition(":")[2]
    if name not in ("auto", "cpu") and not (name.startswith("cuda:") and index.isdigit()):
        raise UsageError(f"--device {name!r}: expected auto, cpu, cuda or cuda:N")
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError:
        raise UsageError("shmdoctor bench needs torch: pip install 'shmdoctor[bench]'") from None

    available = torch.cuda.is_available()
    if name == "auto":
        name, index = ("cuda:0", "0") if available else ("cpu", "")
    info = {"name": name, "torch": torch.__version__, "sharing_strategy": mp.get_sharing_strategy()}
    if name == "cpu":
        return name, info
    if not available or int(index) >= torch.cuda.device_count():
        raise UsageError(f"--device {name}: CUDA device not available (torch sees {torch.cuda.device_count()})")
    info["model"] = torch.cuda.get_device_name(int(index))
    return name, info


@click.command()
@click.option(
    "--dataset", metavar="MODULE:ATTR", help="Your Dataset (or a callable returning it), imported by each run."
)
@click.option("--sample-bytes", metavar="SIZE", help="The synthetic dataset: bytes of one sample (1MiB, 512k).")
@click.option(
    "--item-latency",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="The synthetic dataset: loading work per sample.",
)
@click.option("--batch-size", type=click.IntRange(min=1), required=True, help="Samples per batch.")
@click.option("--num-workers", default="0,1,2,4", show_default=True, metavar="LIST", help="num_workers to sweep.")
@click.option("--prefetch-factor", default="2", show_default=True, metavar="LIST", help="prefetch_factor to sweep.")
@click.option("--pin-memory", metavar="LIST", help="pin_memory to sweep [CUDA: true,false; CPU: false].")
@click.option("--non-blocking", metavar="LIST", help="non_blocking copies to sweep [CUDA: true,false; CPU: false].")
@click.option(
    "--step-time",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="The training step, emulated by a sleep after each batch.",
)
@click.option(
    "--batches",
    type=click.IntRange(min=1),
    metavar="N",
    help="Time exactly N batches a config (default: until the per-batch time settles).",
)
@click.option(
    "--budget",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Longest loop a config may run.",
)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N.")
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, writable=True),
    metavar="PNG",
    help="Write a chart of the sweep (needs matplotlib: shmdoctor[plot]).",
)
def command(
    dataset,
    sample_bytes,
    item_latency,
    batch_size,
    num_workers,
    prefetch_factor,
    pin_memory,
    non_blocking,
    step_time,
    batches,
    budget,
    device,
    fmt,
    plot,
) -> int:
    """Run the DataLoader with each setting in its own process; time it, watch /dev/shm, recommend a config.

    \b
    shmdoctor bench --sample-bytes 1MiB --item-latency 0.005 --batch-size 100 --step-time 0.2 --num-workers 0,1,2,3,4
    shmdoctor bench --dataset mypkg.data:train_set --batch-size 64 --num-workers 0,2,4,8 --format json
    """
    if not dataset and not sample_bytes:
        raise UsageError("give --sample-bytes SIZE (the synthetic dataset) or --dataset MODULE:ATTR")
    if dataset and item_latency:
        raise UsageError("--item-latency applies to the synthetic dataset, not to --dataset")
    workers = int_list(num_workers, "--num-workers", 0)
    prefetch = int_list(prefetch_factor, "--prefetch-factor", 1)
    pins = bool_list(pin_memory, "--pin-memory") if pin_memory else None
    blocking = bool_list(non_blocking, "--non-blocking") if non_blocking else None
    sample = parse_size(sample_bytes, what="--sample-bytes") if sample_bytes else None
    if plot:
        from ..bench import plot as plotting

        plotting.require()

    from .. import capacity
    from ..bench import render, run, sweep
    from ..bench.progress import progress
    from ..probe import local

    name, info = resolve_device(device)
    cuda = name.startswith("cuda")
    measured = loader_spec(  # the synthetic batch, or a --dataset's, measured
        batch_size=batch_size,
        num_workers=None,
        prefetch_factor=None,
        sample_bytes=sample,
        dataset=dataset,
        pin_memory=False,
        ranks=1,
    ).config()
    workload = run.Workload(
        batch_size=batch_size,
        sample_bytes=measured.sample_bytes,
        batch_bytes=measured.batch_bytes,
        tensors_per_batch=measured.tensors_per_batch,
        dataset=dataset,
        item_latency=item_latency,
        step_time=step_time,
        batches=batches,
        budget=budget,
        device=name,
    )
    default = [True, False] if cuda else [False]
    configs = sweep.configs(workers, prefetch, pins or default, blocking or default)
    facts = local.probe()
    results: list = []
    try:
        with progress(len(configs), cuda) as done:
            for result in run.sweep(workload, configs):
                results.append(result)
                done(result)
    except KeyboardInterrupt:  # Ctrl-C: what finished is still worth showing; the rest is stopped and cleaned up
        if not results:
            raise
        click.echo(f"shmdoctor: interrupted after {len(results)} of {len(configs)} configs", err=True)
    rec = sweep.recommend(results, capacity.available(facts))
    findings = run.findings(workload, results, facts)
    doc = render.document(workload, results, rec, findings, facts, info)
    click.echo(render.render_json(doc) if fmt == "json" else render.render_text(doc))
    if plot:
        plotting.write(doc, plot)
    if len(results) < len(configs):
        return ExitCode.INTERRUPTED
    return ExitCode.FINDING if any(f.severity == "error" for f in findings) else ExitCode.OK
