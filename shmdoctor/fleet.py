"""audit and lint: many targets read from one place (a Docker engine, some files), each judged against the command
line's loader, or against its own shmdoctor.loader label or annotation laid over it key by key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from . import suppress
from .config import Judging
from .errors import UsageError
from .limits import ENGINE_TIMEOUT, MAX_TIMEOUT, seconds
from .model import Facts, Report, Severity
from .probe import docker  # stdlib only: the Docker SDK is imported when the engine is reached
from .probe.documents import STDIN, Definition
from .reports import Audit, Lint
from .rules import judge
from .workload import Workload, labelled_requirement, selection


def audit(
    containers: tuple[str, ...],
    filters: tuple[str, ...],
    *,
    include_exited: bool,
    exec_df: bool,
    workload: Workload,
    fail_on: Severity,
    timeout: float = ENGINE_TIMEOUT,
    names: tuple[str, ...] = (),
) -> Audit:
    """The containers of the engine DOCKER_HOST names (those named, those the filters match, or every running one),
    all of the engine's answers within `timeout` seconds; `names`: the containers the loader applies to
    (--workload), else those that look like they use /dev/shm (workload.selection)."""
    if containers and filters:
        raise UsageError("give container names or --filter, not both")
    seconds("--timeout", timeout, MAX_TIMEOUT)
    engine_filters = docker.parse_filters(filters)
    workload.validate()  # a bad command line is refused before the engine is reached
    probed = docker.probe_within(
        timeout, list(containers), engine_filters, include_exited=include_exited, exec_df=exec_df
    )
    judged: dict[tuple, Report] = {}  # containers alike but for their names (replicas, a sweep) are judged once
    skipped = selection([p.facts for p in probed], names) if workload.given else [""] * len(probed)

    def one(p: docker.Probed, skip: str) -> Report:
        facts, ignore = ignoring(p)
        key = (replace(facts, target=replace(facts.target, name="", id=None)), p.loader_label, p.notes, skip)
        if key not in judged:
            judged[key] = judge_labelled(key[0], workload, p.loader_label, fail_on, p.notes, skipped=skip)
        report = judged[key]
        return suppress.mark(replace(report, facts=replace(report.facts, target=p.facts.target)), ignore)

    reports = tuple(map(one, probed, skipped))
    return Audit(reports, engine=docker.address(), exec=exec_df, include_exited=include_exited)


def ignoring(p: docker.Probed) -> tuple[Facts, suppress.Ignore | None]:
    """A container's facts and what its shmdoctor.ignore label ignores; a label that names a rule that does not
    exist is its `bad-label` finding (facts.bad_ignore) and ignores nothing: one bad label never stops an audit."""
    try:
        return p.facts, suppress.in_source([], None, p.ignore_label, f"container {p.facts.target.name}")
    except UsageError as e:
        return replace(p.facts, bad_ignore=str(e)), None


def judge_labelled(
    facts: Facts,
    workload: Workload,
    label: str | None,
    fail_on: Severity,
    notes: tuple[str, ...] = (),
    at: str = "",
    skipped: str = "",
) -> Report:
    """One target (a container, a service, a workload) against its own loader label or annotation laid over the
    command line's loader. A label that is not a loader is that target's `bad-label` finding, judged without a
    loader: one bad label never stops an audit or a lint of the others. `at`: where the label is (file:line);
    `skipped`: why the command line's loader does not apply to it (workload.selection), said in its notes."""
    if skipped and workload.given:
        workload, notes = Workload(), notes + (skipped,)
    try:
        need, label_notes = labelled_requirement(workload, label, facts)
    except UsageError as e:
        need, label_notes = None, ()
        facts = replace(facts, bad_label=f"{at}: {e}" if at else str(e))
    report = judge(facts, need, fail_on=fail_on)
    return replace(report, notes=report.notes + notes + label_notes)


def _plainly(file: str) -> Judging:
    return Judging()


def lint(
    paths: tuple[str, ...],
    *,
    swarm: bool | None,
    env_file: str | None = None,
    judging: Callable[[str], Judging] = _plainly,
    scripts: bool = True,
    names: tuple[str, ...] = (),
    compose_files: tuple[str, ...] = (),
) -> Lint:
    """The compose services, Kubernetes workload containers and run commands defined in paths (files, directories,
    '-'), and the compose stack `compose_files` (as compose's -f), each judged as `judging` says for its file (its
    config's and the command line's options); `scripts`: a folder's scripts are read too; `names`: the targets the
    loader applies to (--workload), else those that look like they use /dev/shm (workload.selection)."""
    from .probe import files  # lazy: PyYAML is imported only here

    inputs = files.read(list(paths), swarm, env_file, scripts, compose_files)
    found = inputs.definitions
    skipped = selection([d.facts for d in found], names)

    def one(d: Definition, skip: str) -> Report:
        how = judging(d.facts.target.file or STDIN)
        report = judge_labelled(
            d.facts, how.workload, d.loader_spec, how.fail_on, d.notes, at=d.loader_at, skipped=skip
        )
        return suppress.mark(report, d.ignore, how.rules)

    reports = tuple(map(one, found, skipped))
    return Lint(
        reports,
        sources=tuple(inputs.sources),
        passed_over=tuple(inputs.objects),
        files_passed_over=tuple(inputs.files),
        errors=tuple(inputs.errors),
        digests=inputs.digests,
    )
