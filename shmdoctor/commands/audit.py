"""shmdoctor audit: the containers of a Docker engine, judged from the outside against a loader, read-only."""

from __future__ import annotations

from dataclasses import replace

import click

from ..errors import UsageError
from ..model import Audit, Report
from ..options import labelled_requirement, loader_kwargs, loader_options, output_options, requirement_from
from ..probe import docker  # stdlib only: the Docker SDK is imported when the engine is reached
from ..render import render
from ..rules import judge


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
@loader_options
@output_options
def command(containers, filters, include_exited, exec_df, fmt, fail_on, **loader) -> int:
    """Every running container (or those named), from the host, through the Docker engine (DOCKER_HOST).

    A container's label shmdoctor.loader=batch_size=100,num_workers=4,sample_bytes=1MiB overrides the loader
    options for it. Read-only: inspect only, unless --exec.

    \b
    shmdoctor audit --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    shmdoctor audit trainer-1 trainer-2 --format json
    shmdoctor audit --filter label=team=vision --all
    """
    if containers and filters:
        raise UsageError("give container names or --filter, not both")
    engine_filters = docker.parse_filters(filters)
    kwargs = loader_kwargs(**loader)
    need = requirement_from(kwargs)
    engine = docker.Engine()
    try:
        probed = docker.probe(engine, list(containers), engine_filters, include_exited=include_exited, exec_df=exec_df)
    finally:
        engine.close()
    reports = tuple(_judge(p, kwargs, need, fail_on) for p in probed)
    audit = Audit(reports, engine=engine.host, exec=exec_df, include_exited=include_exited)
    click.echo(render(audit, fmt))
    click.echo(
        "note: "
        + (
            "/dev/shm use read with df inside each running container (--exec)"
            if exec_df
            else "read-only: inspect does not tell /dev/shm use (--exec reads it with df inside)"
        ),
        err=True,
    )
    return audit.exit_code


def _judge(probed, kwargs: dict | None, need, fail_on: str) -> Report:
    """The container's own loader label, if it has one, overrides the command line; a bad one is said, not fatal."""
    facts = probed.facts
    try:
        need, notes = labelled_requirement(kwargs, probed.loader_label)
    except UsageError as e:  # a bad label is the container's problem, said in its report; the others go on
        notes = ()
        facts = replace(facts, unreadable=facts.unreadable + (f"label {docker.LOADER_LABEL}: {e}",))
    report = judge(facts, need, fail_on=fail_on)
    return replace(report, notes=report.notes + probed.notes + notes)
