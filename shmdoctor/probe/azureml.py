"""Azure ML job YAML (CLI v2: `az ml job create --file job.yml`) -> one Facts per command job, a pipeline's steps
included. /dev/shm is `resources.shm_size` (Docker's size syntax: 2g, 512m); without it Azure ML's own default
applies, which the file does not tell: said as unknown, with the line to add."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..model import SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Shm
from ..sizes import parse_size
from .documents import Definition, Document, target, where
from .workload import ml_signs

JOB_TYPES = ("command", "sweep")


def is_job(body: Any) -> bool:
    """An Azure ML job: its $schema names azureml, or a command job's shape (type: command, command, environment)."""
    if not isinstance(body, dict):
        return False
    if "azureml" in str(body.get("$schema", "")).lower():
        return True
    return body.get("type") in (*JOB_TYPES, "pipeline") and "command" in body and "environment" in body


# A pipeline's control flow nodes: they run no container (their blocks are other steps of the pipeline)
CONTROL_NODES = ("if_else", "do_while", "parallel_for")


def _jobs(body: dict, name: str) -> list[tuple[str, dict]]:
    """(name, job) for the job itself, or each step of a pipeline (not its control flow nodes)."""
    if body.get("type") == "pipeline" and isinstance(body.get("jobs"), dict):
        steps = body["jobs"].items()
        return [
            (f"{name}/{s}", job) for s, job in steps if isinstance(job, dict) and job.get("type") not in CONTROL_NODES
        ]
    return [(name, body)]


def _facts(doc: Document, name: str, job: dict) -> Facts:
    resources = job.get("resources") or {}
    if not isinstance(resources, dict):
        raise UsageError(f"{where(doc.source, job)}: {name}: resources must be a mapping")
    written = resources.get("shm_size")
    unreadable = []
    if written in (None, ""):
        unreadable.append(
            f"{SHM_SIZE_UNKNOWN} (no resources.shm_size: Azure ML's default applies; set it for your loader)"
        )
        shm = Shm.unmeasured(None, "docker-shm", "no resources.shm_size")
    else:
        try:
            size = parse_size(str(written), what="resources.shm_size")
        except UsageError as e:
            raise UsageError(f"{where(doc.source, resources)}: {name}: {e}") from None
        shm = Shm.unmeasured(size, "docker-shm", f"resources.shm_size: {written}")
    trial = job.get("trial")
    if not isinstance(trial, dict):  # a sweep's command is its trial's
        trial = job
    return Facts(
        target=target("workload", doc.source, name, job),
        shm=shm,
        ipc=Ipc("private"),
        memory=Memory(None, None),
        runtime="azureml",
        unreadable=tuple(unreadable),
        ml_signs=ml_signs(str(trial.get("environment", "")), trial.get("command")),
    )


def placed(body: dict) -> list[tuple[str, dict]]:
    """(name, job) for the job itself or each step of a pipeline: what lint judges and --fix edits."""
    return _jobs(body, str(body.get("display_name") or body.get("name") or "job"))


def probe(doc: Document) -> list[Definition]:
    return [Definition(_facts(doc, label, job)) for label, job in placed(doc.body)]
