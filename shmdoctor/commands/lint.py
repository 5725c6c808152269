"""shmdoctor lint: compose files and Kubernetes manifests (or `kubectl get -o json`), judged before anything runs."""

from __future__ import annotations

import dataclasses

import click

from ..errors import UsageError
from ..model import Report, Severity
from ..options import labelled_requirement, loader_kwargs, loader_options, output_options
from ..render import json as render_json
from ..render import text as render_text
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
    reports = [_judge(d, base, fail_on) for d in inputs.definitions]
    passed_over, sources = inputs.objects, inputs.sources

    if fmt == "json":
        click.echo(render_json.render_many(reports, passed_over=passed_over, files_passed_over=inputs.files))
    else:
        targets = "1 service or workload" if len(reports) == 1 else f"{len(reports)} services and workloads"
        title = f"shmdoctor lint: {targets} in {len(sources)} file" + "s"[len(sources) == 1 :]
        click.echo(
            render_text.render_table(reports, title) + "\n" + render_text.fixes_by_target(reports) if reports else title
        )
        if passed_over:
            click.echo(f"passed over {len(passed_over)} objects without a pod template: " + ", ".join(passed_over))
        for why in inputs.files:
            click.echo(f"passed over {why}")
    return max((r.exit_code for r in reports), default=0)


def _judge(found, base: dict | None, fail_on: Severity) -> Report:
    """One target, with its own loader spec (a label or annotation) over the command line's, key by key."""
    try:
        need, notes = labelled_requirement(base, found.loader_spec)
    except UsageError as e:
        raise UsageError(f"{found.loader_at}: {found.facts.target.name}: shmdoctor.loader: {e}") from None
    return dataclasses.replace(judge(found.facts, need, fail_on=fail_on), notes=notes)
