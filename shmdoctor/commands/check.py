"""shmdoctor check: this container (or machine), judged against a loader."""

from __future__ import annotations

import click

from ..options import consumer_options, loader_options, output_options, workload
from ..probe import local
from ..render import render
from ..rules import judge
from ..suppress import rule_options, selected, selection


@click.command()
@loader_options
@consumer_options
@output_options("check")
@rule_options
def command(ignore, select, fmt, fail_on, **loader) -> int:
    """Where /dev/shm comes from, its size and use, the IPC mode and memory limit; with a loader, whether it fits.

    \b
    shmdoctor check
    shmdoctor check --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    shmdoctor check --batch-size 64 --num-workers 8 --dataset mypkg.data:train_set --format json
    """
    spec = workload(**loader)
    spec.validate()  # a bad command line is refused before anything is read
    facts = local.probe()
    report = selected(judge(facts, spec.requirement(facts), fail_on=fail_on), selection(ignore, select))
    click.echo(render(report, fmt))
    return report.exit_code
