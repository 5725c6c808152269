"""shmdoctor bench: sweep DataLoader settings in isolated runs, measure /dev/shm against the prediction, recommend."""

from __future__ import annotations

import math

import click

from ..errors import UsageError
from ..limits import shown
from ..numbers import IntRange, ascii_float, integer
from ..options import FORMATS
from ..sizes import parse_size

TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
MAX_WORKERS = 1024  # more worker processes than any machine runs for one loader
MAX_PREFETCH = 1024
MAX_BATCHES = 100_000


def int_list(text: str, what: str, least: int, most: int) -> tuple[int, ...]:
    try:
        values = [integer(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{what}: expected a comma list of integers, e.g. 0,1,2,4; got {shown(text)}") from None
    if not values or min(values) < least or max(values) > most:
        raise UsageError(f"{what}: expected integers from {least} to {most}, got {shown(text)}")
    return tuple(dict.fromkeys(values))


def workers_spec(text: str) -> tuple[tuple[int, ...], bool]:
    """--num-workers: a comma list (walked) or a range A..B / A:B (searched); (the worker counts, searched)."""
    for sep in ("..", ":"):
        if sep in text:
            low, _, high = (part.strip() for part in text.partition(sep))  # short: int() refuses 4,301 digits
            counts = len(text) < 16 and all(p.isascii() and p.isdecimal() for p in (low, high))
            if not counts or not int(low) < int(high) <= MAX_WORKERS:
                raise UsageError(
                    f"--num-workers: a range is two counts from 0 to {MAX_WORKERS}, the lower first, e.g. 0..32; "
                    f"got {shown(text)}"
                )
            return tuple(range(int(low), int(high) + 1)), True
    return int_list(text, "--num-workers", 0, MAX_WORKERS), False


def bool_list(text: str, what: str) -> tuple[bool, ...]:
    values = [v.strip().lower() for v in text.split(",") if v.strip()]
    if not values or any(v not in TRUE + FALSE for v in values):
        raise UsageError(f"{what}: expected a comma list of true/false, got {shown(text)}")
    return tuple(dict.fromkeys(v in TRUE for v in values))


def pin_device_list(text: str) -> tuple[str | None, ...]:
    """--pin-memory-device: a comma list of cuda or cuda:N, `none` (or nothing) for not passing it at all."""
    values = [v.strip().lower() for v in text.split(",")]
    if any(
        v not in ("", "none", "cuda") and not (v.startswith("cuda:") and v[5:].isascii() and v[5:].isdigit())
        for v in values
    ):
        raise UsageError(f"--pin-memory-device: expected a comma list of none, cuda or cuda:N; got {shown(text)}")
    return tuple(dict.fromkeys(None if v in ("", "none") else v for v in values))


class Seconds(click.ParamType):
    """A finite number of seconds in [least, most]: nan, inf and 1e300 are usage errors, not an endless run."""

    name = "seconds"

    def __init__(self, most: float, least: float = 0.0, open_least: bool = False):
        self.most, self.least, self.open_least = most, least, open_least

    def convert(self, value, param, ctx):
        ascii_float(value, param, ctx)
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        low = number <= self.least if self.open_least else number < self.least
        if not math.isfinite(number) or low or number > self.most:
            above = "above" if self.open_least else "from"
            self.fail(f"{value!r}: expected seconds {above} {self.least:g} up to {self.most:g}", param, ctx)
        return number


@click.command()
@click.option(
    "--dataset", metavar="MODULE:ATTR", help="Your Dataset (or a callable returning it), imported by each run."
)
@click.option("--sample-bytes", metavar="SIZE", help="The synthetic dataset: bytes of one sample (1MiB, 512k).")
@click.option(
    "--item-latency",
    type=Seconds(most=60),
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="The synthetic dataset: loading work per sample.",
)
@click.option("--batch-size", type=IntRange(min=1), required=True, help="Samples per batch.")
@click.option(
    "--num-workers",
    default="0,1,2,4",
    show_default=True,
    metavar="LIST|A..B",
    help="num_workers to sweep: a list is walked up until more workers stop paying; a range A..B is searched.",
)
@click.option("--prefetch-factor", default="2", show_default=True, metavar="LIST", help="prefetch_factor to sweep.")
@click.option("--pin-memory", metavar="LIST", help="pin_memory to sweep [CUDA: true,false; CPU: false].")
@click.option("--non-blocking", metavar="LIST", help="non_blocking copies to sweep [CUDA: true,false; CPU: false].")
@click.option(
    "--pin-memory-device",
    metavar="LIST",
    help="pin_memory_device to sweep beside pin_memory=true, e.g. none,cuda (none: not passed) [CUDA only; "
    "torch 2.9 and later ignore it, and bench says so].",
)
@click.option(
    "--persistent-workers",
    metavar="LIST",
    help="persistent_workers to sweep (true,false); times each config's next epoch start and its /dev/shm.",
)
@click.option("--exhaustive", is_flag=True, help="Run every config of the grid: no early stop, no search.")
@click.option("--run-failing", is_flag=True, help="Run the configs predicted not to fit /dev/shm too (default: one).")
@click.option(
    "--step-time",
    type=Seconds(most=3600),
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="The training step, emulated by a sleep after each batch.",
)
@click.option(
    "--batches",
    type=IntRange(min=1, max=MAX_BATCHES),
    metavar="N",
    help="Time exactly N batches a config (default: until the per-batch time settles).",
)
@click.option(
    "--budget",
    type=Seconds(most=86400, open_least=True),
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
    pin_memory_device,
    persistent_workers,
    exhaustive,
    run_failing,
    step_time,
    batches,
    budget,
    device,
    fmt,
    plot,
) -> int:
    """Run the DataLoader with each setting in its own process; time it, watch /dev/shm, recommend a config.

    \b
    shmdoctor bench --sample-bytes 1MiB --item-latency 0.005 --batch-size 100 --step-time 0.2 --num-workers 0..8
    shmdoctor bench --dataset mypkg.data:train_set --batch-size 64 --num-workers 0,2,4,8 --format json
    """
    if not dataset and not sample_bytes:
        raise UsageError("give --sample-bytes SIZE (the synthetic dataset) or --dataset MODULE:ATTR")
    if dataset and sample_bytes:
        raise UsageError("give --sample-bytes or --dataset, not both")
    if dataset and item_latency:
        raise UsageError("--item-latency applies to the synthetic dataset, not to --dataset")
    from ..bench.session import Request

    workers, search = workers_spec(num_workers)
    pins = bool_list(pin_memory, "--pin-memory") if pin_memory else None
    pin_devices = pin_device_list(pin_memory_device) if pin_memory_device is not None else (None,)
    if any(pin_devices) and pins is not None and True not in pins:
        raise UsageError("--pin-memory-device applies with pin_memory true; --pin-memory is false only")
    request = Request(
        batch_size=batch_size,
        workers=workers,
        search=search,
        exhaustive=exhaustive,
        run_failing=run_failing,
        persistent_workers=bool_list(persistent_workers, "--persistent-workers") if persistent_workers else None,
        prefetch=int_list(prefetch_factor, "--prefetch-factor", 1, MAX_PREFETCH),
        pin_memory=pins,
        pin_memory_device=pin_devices,
        non_blocking=bool_list(non_blocking, "--non-blocking") if non_blocking else None,
        sample_bytes=parse_size(sample_bytes, what="--sample-bytes") if sample_bytes else None,
        dataset=dataset,
        item_latency=item_latency,
        step_time=step_time,
        batches=batches,
        budget=budget,
        device=device,
    )
    if plot:
        from ..bench import plot as plotting

        plotting.require()
    from ..bench import session
    from ..bench.progress import progress
    from ..bench.stop import Stopped, stop_on_signals
    from ..render import render

    try:
        with stop_on_signals():  # SIGTERM is a stop like Ctrl-C: what ended is shown, nothing of the run is left
            outcome = session.bench(request, progress)
    except Stopped as stop:  # before any config ended: nothing to show
        click.echo(f"shmdoctor: {stop.word}", err=True)
        return stop.exit_code
    if outcome.note:
        click.echo(outcome.note, err=True)
    click.echo(render(outcome.document, fmt))
    if plot:
        plotting.write(outcome.document.body, plot)
    return outcome.exit_code
