"""shmdoctor watch: /dev/shm while training runs: used over time, the peak, the budget, and who holds it."""

from __future__ import annotations

import click

from ..exits import ExitCode
from ..limits import MAX_DURATION, MAX_TIMEOUT, MIN_INTERVAL, seconds
from ..model import SHM
from ..numbers import FLOAT
from ..options import FORMATS, loader_options, loader_spec
from ..render import render
from ..shm import sampling


@click.command()
@click.option(
    "--interval",
    type=FLOAT,
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between samples of the usage (statvfs: cheap).",
)
@click.option(
    "--holders-every",
    type=FLOAT,
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between scans of /proc for holders, made only when the usage changed (the costly part).",
)
@click.option("--duration", type=FLOAT, metavar="SECONDS", help="Stop after this long (default: until Ctrl-C).")
@click.option(
    "--path", "directory", type=click.Path(), default=SHM, show_default=True, metavar="DIR", help="The tmpfs to watch."
)
@loader_options
@click.option(
    "--format",
    "fmt",
    type=FORMATS,
    default="text",
    show_default=True,
    help="json: one JSON object per sample (JSON lines), then a summary object.",
)
def command(interval, holders_every, duration, directory, fmt, **loader) -> int:
    """Used / size of /dev/shm over time, the peak, the loader's predicted need as the budget, and who holds it per
    process (descriptors and maps, unlinked segments included). Ctrl-C ends it with a summary (exit 130; SIGTERM:
    143).

    \b
    shmdoctor watch
    shmdoctor watch --batch-size 100 --num-workers 4 --sample-bytes 1MiB --duration 600
    shmdoctor watch --format json --interval 1 > shm.jsonl
    """
    seconds("--interval", interval, MAX_TIMEOUT, least=MIN_INTERVAL)
    seconds("--duration", duration, MAX_DURATION)
    seconds("--holders-every", holders_every, MAX_TIMEOUT, never=True)
    need = loader_spec(**loader).requirement()
    sampler = sampling.Sampler(directory, holders_every=holders_every, budget=need.bytes if need else None)
    _echo(render(sampler.start(interval), fmt))
    summary = sampling.watch(sampler, interval=interval, duration=duration, emit=lambda s: _echo(render(s, fmt)))
    _echo(render(summary, fmt))
    if summary.interrupted:
        stopped = "interrupted" if summary.exit_code == ExitCode.INTERRUPTED else "terminated"
        click.echo(f"shmdoctor: {stopped}", err=True)
    return summary.exit_code


def _echo(text: str) -> None:
    if text:
        click.echo(text)  # flushed: one line (JSON: one object) per sample as it comes
