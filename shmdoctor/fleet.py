"""audit and lint: many targets read from one place (a Docker engine, some files), each judged against the command
line's loader, or against its own shmdoctor.loader label or annotation laid over it key by key."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .errors import UsageError
from .loader import LOADER_LABEL, LoaderSpec, labelled_requirement
from .model import Audit, Lint, Report, Severity
from .probe import docker  # stdlib only: the Docker SDK is imported when the engine is reached
from .rules import judge

if TYPE_CHECKING:
    from .probe.documents import Definition


def audit(
    containers: tuple[str, ...],
    filters: tuple[str, ...],
    *,
    include_exited: bool,
    exec_df: bool,
    loader: LoaderSpec,
    fail_on: Severity,
) -> Audit:
    """The containers of the engine DOCKER_HOST names (those named, those the filters match, or every running one)."""
    if containers and filters:
        raise UsageError("give container names or --filter, not both")
    engine_filters = docker.parse_filters(filters)
    loader.requirement()  # a bad command line is refused before the engine is reached
    engine = docker.Engine()
    try:
        probed = docker.probe(engine, list(containers), engine_filters, include_exited=include_exited, exec_df=exec_df)
    finally:
        engine.close()
    reports = tuple(judge_container(p, loader, fail_on) for p in probed)
    return Audit(reports, engine=engine.host, exec=exec_df, include_exited=include_exited)


def judge_container(probed: docker.Probed, loader: LoaderSpec, fail_on: Severity) -> Report:
    """The container's own loader label, if it has one, overrides the command line; a bad one is said, not fatal."""
    facts = probed.facts
    try:
        need, notes = labelled_requirement(loader, probed.loader_label)
    except UsageError as e:  # a bad label is the container's problem, said in its report; the others go on
        need, notes = loader.requirement(), ()
        facts = replace(facts, unreadable=facts.unreadable + (f"label {LOADER_LABEL}: {e}",))
    report = judge(facts, need, fail_on=fail_on)
    return replace(report, notes=report.notes + probed.notes + notes)


def lint(
    paths: tuple[str, ...], *, swarm: bool | None, env_file: str | None = None, loader: LoaderSpec, fail_on: Severity
) -> Lint:
    """The compose services and Kubernetes workload containers defined in paths (files, directories, '-')."""
    from .probe import files  # lazy: PyYAML is imported only here

    inputs = files.read(list(paths), swarm, env_file)
    reports = tuple(judge_definition(d, loader, fail_on) for d in inputs.definitions)
    return Lint(
        reports, sources=tuple(inputs.sources), passed_over=tuple(inputs.objects), files_passed_over=tuple(inputs.files)
    )


def judge_definition(found: Definition, loader: LoaderSpec, fail_on: Severity) -> Report:
    """One target, with its own loader spec (a label or annotation) over the command line's; a bad one is exit 2."""
    try:
        need, notes = labelled_requirement(loader, found.loader_spec)
    except UsageError as e:
        raise UsageError(f"{found.loader_at}: {found.facts.target.name}: {LOADER_LABEL}: {e}") from None
    return replace(judge(found.facts, need, fail_on=fail_on), notes=notes)
