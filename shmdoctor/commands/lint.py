"""shmdoctor lint: compose files and Kubernetes manifests (or `kubectl get -o json`), judged before anything runs."""

from __future__ import annotations

from collections.abc import Callable

import click

from ..config import config_options, resolver, show
from ..errors import UsageError
from ..exits import ExitCode
from ..fleet import lint
from ..options import consumer_options, loader_options, output_options, selection_option
from ..probe.documents import STDIN, files, keeping
from ..render import render
from ..render.lint import diffs_json
from ..reports import Lint
from ..suppress import rule_options


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(), metavar="FILE|DIR|-...")
@click.option(
    "--compose-file",
    "compose_files",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A compose file of one stack, as compose's own -f (repeat it: each file merged over the ones before). "
    "The stack is judged besides the paths given; its files are not read again alone in them.",
)
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
@click.option(
    "--fix",
    is_flag=True,
    help="Write the fix that sizes /dev/shm or memory into each failing or warning target's file (comments and "
    "layout kept), then lint again. Exit 1 when a file changed or still fails.",
)
@click.option(
    "--diff",
    is_flag=True,
    help="Print --fix's changes as a unified diff (--format json: lint's document with each file's patch); write "
    "nothing. Exit as lint's, 1 too where a file would change.",
)
@click.option(
    "--scripts/--no-scripts",
    default=True,
    help="Read the docker, podman and nerdctl run commands of the scripts a folder holds (*.sh, *.bash, *.zsh, *.mk, "
    "*.sbatch, *.slurm, Makefile, Jenkinsfile, a shell's shebang); a script named on the command line is always read.",
)
@loader_options
@consumer_options
@selection_option
@rule_options
@output_options("lint")
@config_options
def command(
    paths,
    compose_files,
    swarm,
    env_file,
    fix,
    diff,
    scripts,
    names,
    config,
    show_config,
    ignore,
    select,
    fmt,
    fail_on,
    **loader,
) -> int:
    """Judge workloads from their files: compose services, Kubernetes pods (custom resources as their operators
    shape them, Argo and Tekton steps), ECS task and Batch job definitions, Azure ML jobs, Podman Quadlet units and
    pods, the docker / podman / nerdctl run commands of shell scripts and Makefiles, devcontainers, CI container
    jobs (GitHub Actions, GitLab), Jenkins docker agents, SkyPilot tasks, Slurm's pyxis containers, Terraform
    resources (ECS, Batch, kubernetes_*, docker_container), CloudFormation templates (ECS, Batch), Nomad docker tasks
    (--fix shows the change of these three, never writes it). One report per service, container or command.

    Directories are searched for *.yml, *.yaml, *.json, *.container, *.pod, *.tf, *.nomad and scripts (--no-scripts:
    not), hidden folders skipped but .devcontainer and .github; files that define none are passed over with why (a
    script without a run command unsaid); one that cannot be judged (a bad value) is an error line and exit 2, every
    other file still judged; '-' reads stdin. The loader and consumer options apply to the targets that look like they
    use /dev/shm (an ML image or command, GPUs, an inference server; all when none does), or to those --workload names;
    --fix writes into no other. A workload's own label or annotation `shmdoctor.loader:
    "batch_size=100,num_workers=4,sample_bytes=1MiB"` overrides the loader options for it.

    Compose files are read as compose reads them, each service reported once: in a directory, compose.yaml (or
    docker-compose.yml) with its compose.override.yaml, or the files COMPOSE_FILE names in the .env beside them;
    include: and extends: resolved; --compose-file FILE... as one stack. A compose file named alone is read alone (as
    `docker compose -f FILE`); an override read alone is exit 2, naming its base. A finding points at the file and
    line that set the value. --fix writes into that file, or into the stack's own override where that file is read
    by another stack of the run too (a value inherited through extends: into the service itself).

    Each file's config, the closest .shmdoctor.toml or pyproject.toml with [tool.shmdoctor] above it (or --config's),
    gives the options the command line does not: its own keys, and per-path globs over them for the files they match.

    \b
    shmdoctor lint docker-compose.yml k8s/ --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    helm template ./chart | shmdoctor lint - --batch-size 64 --num-workers 8 --sample-bytes 600k
    kubectl get pods -A -o json | shmdoctor lint - --format json
    shmdoctor lint docker-compose.yml k8s/ --batch-size 100 --num-workers 4 --sample-bytes 1MiB --fix
    aws ecs describe-task-definition --task-definition train | shmdoctor lint - --batch-size 64 --num-workers 8
    """
    if not paths and not compose_files:
        raise UsageError("lint needs a FILE, a DIR, '-' or --compose-file FILE")
    settings = resolver(config)
    if show_config:
        read = [file for path in paths for file in files(path, scripts)] + list(compose_files)
        click.echo(show(settings, [None if file in ("-", STDIN) else file for file in read]))
        return 0

    def again() -> Lint:
        return lint(
            paths,
            swarm=swarm,
            env_file=env_file,
            judging=lambda file: settings.judging(None if file == STDIN else file),
            scripts=scripts,
            names=names,
            compose_files=compose_files,
        )

    if diff and fmt not in ("text", "json"):
        raise UsageError(f"--diff prints a patch as text or json, not {fmt}")
    if not (fix or diff):
        doc = again()
        click.echo(render(doc, fmt))
        return doc.exit_code
    from .. import edit  # lazy: ruamel.yaml only where a file is written

    with keeping(), edit.collector_paused():  # each text parsed once: lint's parse is what --fix edits, the text it
        return _fixing(again, (*paths, *compose_files), fix, diff, fmt)  # writes is judged as it was checked


def _fixing(again: Callable[[], Lint], given: tuple[str, ...], fix: bool, diff: bool, fmt: str) -> int:
    """lint --fix (the files written, then linted again) or --diff (the patch printed beside lint's verdict)."""
    from .. import edit

    doc = again()
    changes = edit.fix_files(doc, given)
    changed = any(c.after != c.before for c in changes)
    refused = False
    for change in changes:
        for line in change.printed:
            click.echo(f"shmdoctor lint --fix: {line}", err=True)
        why = change.refused or (edit.written(change) if fix and change.after != change.before else "")
        if why:  # this file is left as it was; the others are still written
            click.echo(f"shmdoctor: error: {change.path}: not written: {why}", err=True)
            refused = True
        elif fix:
            for line in change.written:
                click.echo(f"shmdoctor lint --fix: fixed {line}", err=True)
    code = max(ExitCode.FINDING if changed else ExitCode.OK, ExitCode.USAGE if refused else ExitCode.OK)
    if diff:  # what lint says of the files as they are, with the patch that --fix would write
        for why in doc.errors:
            click.echo(f"shmdoctor lint: could not judge {why}", err=True)
        click.echo(diffs_json(doc, changes) if fmt == "json" else "".join(c.diff() for c in changes), nl=fmt == "json")
        return max(doc.exit_code, code)
    doc = again() if changed else doc  # the files as they are now: the new verdict
    click.echo(render(doc, fmt))
    return max(doc.exit_code, code)
