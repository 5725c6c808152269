"""Workflow engines' pods: each Argo template (container, script, containerSet) and each Tekton task is a pod, though
no `containers:` list says so in the file. Kubeflow Pipelines compiles to Argo's Workflow, so it is read here too.

Argo (Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow's workflowSpec): a template's pod holds its
container (named `main`, as Argo names it), its script's, or its containerSet's, with the spec's volumes and the
template's own; a resource template's manifest is an object of its own, read as one. Tekton (Task, ClusterTask,
TaskRun, Pipeline, PipelineRun): a task's steps are the containers of one pod, with its volumes and stepTemplate.
Each comes back as (where it sits, template, pod spec, holder), the shape kubernetes.pod_templates gives, named by
its template or task.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import documents
from .documents import Document, with_changes

ARGO_KINDS = ("Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate", "CronWorkflow")
TEKTON_KINDS = ("Task", "ClusterTask", "TaskRun", "Pipeline", "PipelineRun")
Found = tuple[tuple[str, ...], dict, dict, Any]


def engine(obj: dict) -> str | None:
    """'argo' or 'tekton' for an object of theirs, else None."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    if group == "argoproj.io" and obj.get("kind") in ARGO_KINDS:
        return "argo"
    if group == "tekton.dev" and obj.get("kind") in TEKTON_KINDS:
        return "tekton"
    return None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def argo_pods(obj: dict) -> Iterator[Found]:
    spec = _dict(obj.get("spec"))
    if obj.get("kind") == "CronWorkflow":
        spec = _dict(spec.get("workflowSpec"))
    volumes = _list(spec.get("volumes"))
    for template in _list(spec.get("templates")):
        if not isinstance(template, dict):
            continue
        name = str(template.get("name") or "?")
        own = volumes + _list(template.get("volumes"))
        if isinstance(template.get("containerSet"), dict):
            shared = _list(template["containerSet"].get("volumeMounts"))
            containers = [
                with_changes(c, volumeMounts=_list(c.get("volumeMounts")) + shared)
                for c in _list(template["containerSet"].get("containers"))
                if isinstance(c, dict)
            ]
        else:
            body = template.get("container") or template.get("script")
            containers = [with_changes(body, name=body.get("name") or "main")] if isinstance(body, dict) else []
        if containers:
            pod = with_changes(template, containers=containers, volumes=own)
            yield ("spec", "templates", name), template, pod, template


def tekton_pods(obj: dict) -> Iterator[Found]:
    spec = _dict(obj.get("spec"))
    kind = obj.get("kind")
    if kind in ("Task", "ClusterTask"):
        yield from _task(spec, ())
    elif kind == "TaskRun":
        yield from _task(_dict(spec.get("taskSpec")), ())
    else:
        pipeline = _dict(spec.get("pipelineSpec")) if kind == "PipelineRun" else spec
        for task in _list(pipeline.get("tasks")) + _list(pipeline.get("finally")):
            if isinstance(task, dict) and isinstance(task.get("taskSpec"), dict):
                yield from _task(task["taskSpec"], (str(task.get("name") or "?"),))


def _task(spec: dict, path: tuple[str, ...]) -> Iterator[Found]:
    """A Tekton task's pod: its steps (with its stepTemplate under each) as containers, with its volumes."""
    base = _dict(spec.get("stepTemplate"))
    steps = [
        with_changes(step, **{k: v for k, v in base.items() if k not in step})
        for step in _list(spec.get("steps"))
        if isinstance(step, dict)
    ]
    if steps:
        yield path, spec, with_changes(spec, containers=steps, volumes=_list(spec.get("volumes"))), spec


_PARAMETER = ("{{", "$(")  # Argo's {{inputs.parameters.x}}, Tekton's $(params.x)


def is_parameter(value: Any) -> bool:
    """A value the engine fills in when the workflow runs: unknown in the file, never bad input."""
    return isinstance(value, str) and any(p in value for p in _PARAMETER)


def manifests(obj: dict, source: str) -> list[Document]:
    """The objects an Argo resource template creates (`resource.manifest`, YAML in a string), each read as a
    document of the file, its lines the template's."""
    if engine(obj) != "argo":
        return []
    spec = _dict(obj.get("spec"))
    spec = _dict(spec.get("workflowSpec")) if obj.get("kind") == "CronWorkflow" else spec
    out = []
    for template in _list(spec.get("templates")):
        manifest = _dict(_dict(template).get("resource")).get("manifest")
        if isinstance(manifest, str) and manifest.strip():
            for doc in documents.parse(manifest, source):
                _relined(doc.body, documents.line_of(template))
                out.append(Document(source, doc.index, doc.body))
    return out


def _relined(node: Any, line: int | None) -> None:
    """Every mapping of an embedded manifest said to be at its template's line (its own lines count from the
    string's start, not the file's)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if hasattr(item, "line"):
                item.line = line
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
