"""shmdoctor check: this container (or machine), judged against a loader."""

from __future__ import annotations

import click

from ..config import config_options, resolver, show
from ..options import consumer_options, loader_options, output_options
from ..probe import local
from ..render import render
from ..rules import judge
from ..suppress import rule_options, selected


@click.command()
@loader_options
@consumer_options
@output_options("check")
@rule_options
@config_options
def command(config, show_config, ignore, select, fmt, fail_on, **loader) -> int:
    """Where /dev/shm comes from, its size and use, the IPC mode and memory limit; with a loader, whether it fits.

    \b
    shmdoctor check
    shmdoctor check --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    shmdoctor check --batch-size 64 --num-workers 8 --dataset mypkg.data:train_set --format json

    The working directory's config (the closest .shmdoctor.toml, or pyproject.toml's [tool.shmdoctor], above it)
    gives the options the command line does not.
    """
    settings = resolver(config)
    if show_config:
        click.echo(show(settings, [None]))
        return 0
    judging = settings.judging()  # a bad command line or config is refused before anything is read
    facts = local.probe()
    report = selected(judge(facts, judging.workload.requirement(facts), fail_on=judging.fail_on), judging.rules)
    click.echo(render(report, fmt))
    return report.exit_code
