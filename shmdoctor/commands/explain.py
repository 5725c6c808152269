"""shmdoctor explain: why did the job die? A log's failure texts weighed against the facts where it ran."""

from __future__ import annotations

import click

from ..errors import UsageError
from ..limits import ENGINE_TIMEOUT, MAX_TIMEOUT, seconds
from ..options import FORMATS, loader_options, loader_spec
from ..postmortem import explain_container, explain_log
from ..render import render


@click.command()
@click.argument("log", required=False, metavar="[FILE|-]")
@click.option("--container", metavar="NAME", help="A container's log tail and State (OOMKilled, ExitCode), read-only.")
@click.option(
    "--tail", type=click.IntRange(1, 1_000_000), default=5000, show_default=True, help="Lines of --container's log."
)
@click.option(
    "--gpus",
    type=click.IntRange(1, 4096),
    help="Local GPUs of the job, for NCCL's need [from the log: NCCL's ranks, its devices, torchrun; else detected].",
)
@click.option(
    "--timeout",
    type=float,
    metavar="SECONDS",
    help=f"For all of --container's engine answers together [default: {ENGINE_TIMEOUT:g}], or for reading the log "
    "[default: to its end, as long as a job piped in runs]: past it, exit 3.",
)
@loader_options
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def command(log, container, tail, gpus, timeout, fmt, **loader) -> int:
    """Read the error a job died with (a log, a traceback; FILE, or stdin) and say whether /dev/shm killed it, why,
    and the exact fix. The facts where it runs (or of --container) decide: a bus error with /dev/shm to spare is
    'not shared memory'. Exit 1 when a shared-memory cause is found, 0 when none.

    \b
    shmdoctor explain train.log
    python train.py 2>&1 | tail -200 | shmdoctor explain
    shmdoctor explain --container trainer-1 --format json
    shmdoctor explain --batch-size 100 --num-workers 4 --sample-bytes 1MiB train.log
    """
    if log and container is not None:
        raise UsageError("give a log FILE or --container, not both")
    if container is not None and not container.strip():
        raise UsageError("--container: give a container's name or id (an empty name is none)")
    seconds("--timeout", timeout, MAX_TIMEOUT)
    need = loader_spec(**loader).requirement()
    if container is not None:
        ex = explain_container(container, tail, need, timeout or ENGINE_TIMEOUT, gpus)
    else:  # no default: ending the read of a live job's pipe early would kill the job (SIGPIPE) on its next write
        ex = explain_log(log or "-", need, gpus, timeout)
    click.echo(render(ex, fmt))
    return ex.exit_code
