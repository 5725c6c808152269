"""shmdoctor explain: why did the job die? A log's failure texts weighed against the facts where it ran."""

from __future__ import annotations

import click

from ..diagnose.place import FORMS as PLACE_FORMS
from ..errors import UsageError
from ..limits import ENGINE_TIMEOUT, MAX_TIMEOUT, seconds
from ..numbers import FLOAT, IntRange
from ..options import FORMATS, loader_options, loader_spec
from ..postmortem import explain_container, explain_log
from ..render import render
from ..sizes import parse_size


@click.command()
@click.argument("log", required=False, type=click.Path(), metavar="[FILE|-]")
@click.option("--container", metavar="NAME", help="A container's log tail and State (OOMKilled, ExitCode), read-only.")
@click.option(
    "--tail", type=IntRange(1, 1_000_000), default=5000, show_default=True, help="Lines of --container's log."
)
@click.option(
    "--here",
    is_flag=True,
    help="The log comes from this machine or container (a job's own output piped in): judge it against its facts.",
)
@click.option("--shm-size", "shm_size", metavar="SIZE", help="The /dev/shm where it ran (512m, 2g, 1GiB).")
@click.option(
    "--where",
    "where",
    type=click.Choice(PLACE_FORMS),
    help="Where it ran, the form its fix is said in [from the text where it says; else docker].",
)
@click.option(
    "--gpus",
    type=IntRange(1, 4096),
    help="Local GPUs of the job, for NCCL's need [from the log: NCCL's ranks, its devices, torchrun; else detected].",
)
@click.option(
    "--timeout",
    type=FLOAT,
    metavar="SECONDS",
    help=f"For all of --container's engine answers together [default: {ENGINE_TIMEOUT:g}], or for reading the log "
    "[default: to its end, as long as a job piped in runs]: past it, exit 3.",
)
@loader_options
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def command(log, container, here, shm_size, where, tail, gpus, timeout, fmt, **loader) -> int:
    """Read the error a job died with (a log, a traceback; FILE, or stdin) and say whether /dev/shm killed it, why,
    and the exact fix. Where it ran is evidence: this machine's facts only with --here or --container; else what
    --shm-size / --where state or the text says (a df line, a docker run), or unknown: a bus error there is a
    shared-memory death on the condition said. Exit 1 when a shared-memory cause is found, 0 when none.

    \b
    shmdoctor explain train.log
    python train.py 2>&1 | tail -200 | shmdoctor explain --here
    shmdoctor explain --container trainer-1 --format json
    shmdoctor explain --shm-size 64m --where kubernetes pasted.log
    shmdoctor explain --batch-size 100 --num-workers 4 --sample-bytes 1MiB train.log
    """
    if log and container is not None:
        raise UsageError("give a log FILE or --container, not both")
    if container is not None and (here or shm_size or where):
        raise UsageError("--container judges the container's own facts: --here, --shm-size and --where are for a log")
    if here and (shm_size or where):
        raise UsageError("--here judges this machine's facts: --shm-size and --where state another place")
    if container is not None and not container.strip():
        raise UsageError("--container: give a container's name or id (an empty name is none)")
    seconds("--timeout", timeout, MAX_TIMEOUT)
    need = loader_spec(**loader).requirement()
    if container is not None:
        ex = explain_container(container, tail, need, timeout or ENGINE_TIMEOUT, gpus)
    else:  # no default: ending the read of a live job's pipe early would kill the job (SIGPIPE) on its next write
        shm_bytes = parse_size(shm_size, what="--shm-size") if shm_size is not None else None
        ex = explain_log(log or "-", need, gpus, timeout, here=here, shm_bytes=shm_bytes, form=where)
    click.echo(render(ex, fmt))
    return ex.exit_code
