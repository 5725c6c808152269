"""shmdoctor lint: compose files and Kubernetes manifests (or `kubectl get -o json`), judged before anything runs."""

from __future__ import annotations

import dataclasses

import click

from ..errors import UsageError
from ..model import Lint, Report, Severity
from ..options import labelled_requirement, loader_kwargs, loader_options, output_options
from ..render import render
from ..rules import judge


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option(
    "--swarm/--no-swarm",
    default=None,
    help="Compose files are for Swarm (docker stack deploy), or not. Default: told by Swarm-only deploy keys.",
)
@loader_options
@output_options
def command(paths, swarm, fmt, fail_on, **loader) -> int:
    """Judge compose services and Kubernetes workloads from their files: one report per service or container.

    Directories are searched for *.yml, *.yaml and *.json; '-' reads stdin. A workload's own label or annotation
    `shmdoctor.loader: "batch_size=100,num_workers=4,sample_bytes=1MiB"` overrides the loader options for it.

    \b
    shmdoctor lint docker-compose.yml k8s/ --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    helm template ./chart | shmdoctor lint - --batch-size 64 --num-workers 8 --sample-bytes 600k
    kubectl get pods -A -o json | shmdoctor lint - --format json
    """
    from ..probe import files  # lazy: PyYAML is imported only here

    base = loader_kwargs(**loader)
    inputs = files.read(list(paths), swarm)
    reports = tuple(_judge(d, base, fail_on) for d in inputs.definitions)
    lint = Lint(
        reports, sources=tuple(inputs.sources), passed_over=tuple(inputs.objects), files_passed_over=tuple(inputs.files)
    )
    click.echo(render(lint, fmt))
    return lint.exit_code


def _judge(found, base: dict | None, fail_on: Severity) -> Report:
    """One target, with its own loader spec (a label or annotation) over the command line's, key by key."""
    try:
        need, notes = labelled_requirement(base, found.loader_spec)
    except UsageError as e:
        raise UsageError(f"{found.loader_at}: {found.facts.target.name}: shmdoctor.loader: {e}") from None
    return dataclasses.replace(judge(found.facts, need, fail_on=fail_on), notes=notes)
