"""shmdoctor lint: compose files and Kubernetes manifests (or `kubectl get -o json`), judged before anything runs."""

from __future__ import annotations

import click

from ..fleet import lint
from ..options import consumer_options, loader_options, output_options, workload
from ..render import render


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="FILE|DIR|-...")
@click.option(
    "--swarm/--no-swarm",
    default=None,
    help="Compose files are for Swarm (docker stack deploy), or not. Default: told by Swarm-only deploy keys.",
)
@click.option(
    "--env-file",
    type=click.Path(dir_okay=False),
    help="compose's variables from this file, as `docker compose --env-file`. Default: the .env beside each file.",
)
@loader_options
@consumer_options
@output_options("lint")
def command(paths, swarm, env_file, fmt, fail_on, **loader) -> int:
    """Judge workloads from their files: compose services, Kubernetes pods (custom resources included), ECS task
    and Batch job definitions, Azure ML jobs, Podman Quadlet units. One report per service or container.

    Directories are searched for *.yml, *.yaml, *.json and *.container; files that define none are passed over
    with why; '-' reads stdin. A workload's own label or annotation
    `shmdoctor.loader: "batch_size=100,num_workers=4,sample_bytes=1MiB"` overrides the loader options for it.

    \b
    shmdoctor lint docker-compose.yml k8s/ --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    helm template ./chart | shmdoctor lint - --batch-size 64 --num-workers 8 --sample-bytes 600k
    kubectl get pods -A -o json | shmdoctor lint - --format json
    aws ecs describe-task-definition --task-definition train | shmdoctor lint - --batch-size 64 --num-workers 8
    """
    doc = lint(paths, swarm=swarm, env_file=env_file, workload=workload(**loader), fail_on=fail_on)
    click.echo(render(doc, fmt))
    return doc.exit_code
