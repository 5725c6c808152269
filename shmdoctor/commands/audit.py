"""shmdoctor audit: the containers of a Docker engine, judged from the outside against a loader, read-only."""

from __future__ import annotations

import click

from ..config import config_options, resolver, show
from ..fleet import audit
from ..limits import ENGINE_TIMEOUT
from ..numbers import FLOAT
from ..options import consumer_options, loader_options, output_options, selection_option
from ..render import render
from ..suppress import rule_options, selected


@click.command()
@click.argument("containers", nargs=-1, metavar="[CONTAINER]...")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="KEY=VALUE",
    help="Docker's own filters, repeatable: label=team=vision, name=trainer, ancestor=IMAGE.",
)
@click.option(
    "-a",
    "--all",
    "include_exited",
    is_flag=True,
    help="Exited containers too, with a finding for those the kernel OOM-killed.",
)
@click.option(
    "--exec",
    "exec_df",
    is_flag=True,
    help="Read /dev/shm use inside each running container (runs `df`); without it nothing runs inside.",
)
@click.option(
    "--timeout",
    type=FLOAT,
    default=ENGINE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="For all of the engine's answers together: past it, exit 3.",
)
@loader_options
@consumer_options
@selection_option
@output_options("audit")
@rule_options
@config_options
def command(
    containers,
    filters,
    include_exited,
    exec_df,
    timeout,
    names,
    config,
    show_config,
    ignore,
    select,
    fmt,
    fail_on,
    **loader,
) -> int:
    """Every running container (or those named), from the host, through the Docker engine (DOCKER_HOST).

    A container's label shmdoctor.loader=batch_size=100,num_workers=4,sample_bytes=1MiB overrides the loader
    options for it. The loader options apply to the containers that look like they use /dev/shm (all when none
    does), or to those --workload names. Read-only: inspect only, unless --exec. The working directory's config
    (the closest .shmdoctor.toml, or pyproject.toml's [tool.shmdoctor], above it) gives the options the command line
    does not.

    \b
    shmdoctor audit --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    shmdoctor audit trainer-1 trainer-2 --format json
    shmdoctor audit --filter label=team=vision --all
    """
    settings = resolver(config)
    if show_config:
        click.echo(show(settings, [None]))
        return 0
    judging = settings.judging()
    doc = audit(
        containers,
        filters,
        include_exited=include_exited,
        exec_df=exec_df,
        workload=judging.workload,
        fail_on=judging.fail_on,
        timeout=timeout,
        names=names,
    )
    doc = selected(doc, judging.rules)
    click.echo(render(doc, fmt))
    click.echo(
        "note: "
        + (
            "/dev/shm use read with df inside each running container (--exec)"
            if exec_df
            else "read-only: inspect does not tell /dev/shm use (--exec reads it with df inside)"
        ),
        err=True,
    )
    return doc.exit_code
