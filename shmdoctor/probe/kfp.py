"""Kubeflow Pipelines v2 compiled pipelines (`kfp.compiler.Compiler().compile(...)`: a PipelineSpec document, then a
PlatformSpec document) -> the Facts of each executor's container, judged as the pod KFP's backend makes for it.

Read in kubeflow/pipelines at 7b70c7b9 (2026-08-21): the driver (backend/src/v2/driver/driver.go initPodSpecPatch)
gives the executor's container its image, command, args, env and resources (`resourceMemoryLimit`, else the old
float `memoryLimit` as "%vG"; `accelerator.resourceType` or `type` as the resource's name, `resourceCount` or `count`
as its count); the PlatformSpec's `emptyDirMounts` (kfp-kubernetes' `kubernetes.empty_dir_mount`) become emptyDir
volumes of that medium and sizeLimit mounted in that container (backend/src/v2/driver/k8s.go kubernetesPlatformOps).
`enabledSharedMemory` is in the proto (kubernetes_executor_config.proto, field 16) but neither kfp-kubernetes nor the
driver reads it there (PR #10704, which would have, was closed): the container keeps the runtime's 64 MiB, said.
A placeholder of a pipeline parameter (`{{$.inputs.parameters['pipelinechannel--x']}}`) is the pipeline's default
for x, said as assumed (a run may set another); without a default it is unknown.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .documents import Definition, Document
from .mountpath import at_shm

SOURCE = "kubeflow/pipelines 7b70c7b9"
NOT_APPLIED = (
    f"enabledSharedMemory is not applied by KFP's backend ({SOURCE}: the driver reads emptyDirMounts, not this field):"
    " this container keeps the runtime's 64 MiB; use kubernetes.empty_dir_mount(task, volume_name='dshm', "
    "mount_path='/dev/shm', medium='Memory', size_limit=...)"
)
_CHANNEL = re.compile(r"\{\{\$\.inputs\.parameters\['pipelinechannel--([^']{1,200})'\]\}\}")
_PLACEHOLDER = "{{$"


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def pipeline_spec(body: Any) -> dict | None:
    """The PipelineSpec of a compiled pipeline: the document itself, or a PipelineJob's `pipelineSpec` (the JSON
    that KFP 2.0's compiler and Vertex AI write)."""
    if not isinstance(body, dict):
        return None
    spec: dict = body["pipelineSpec"] if isinstance(body.get("pipelineSpec"), dict) else body
    executors = _dict(spec.get("deploymentSpec")).get("executors")
    if isinstance(executors, dict) and "pipelineInfo" in spec and ("root" in spec or "components" in spec):
        return spec
    return None


def is_pipeline(body: Any) -> bool:
    return pipeline_spec(body) is not None


def _platform(docs: list[Document], spec_doc: Document) -> dict:
    """executor label -> its KubernetesExecutorConfig: the PlatformSpec document after the PipelineSpec, or a
    PipelineJob's own `platformSpec`."""
    bodies = [d.body for d in docs if d is not spec_doc and isinstance(d.body, dict)]
    bodies.append(_dict(spec_doc.body.get("platformSpec")))
    for body in bodies:
        executors = _dict(_dict(_dict(_dict(body.get("platforms")).get("kubernetes")).get("deploymentSpec")))
        if executors.get("executors"):
            return _dict(executors["executors"])
    return {}


class _Values:
    """A field's value as the driver resolves it: a literal, or a pipeline parameter's default (said)."""

    def __init__(self, spec: dict):
        params = _dict(_dict(_dict(spec.get("root")).get("inputDefinitions")).get("parameters"))
        self.defaults = {k: v.get("defaultValue") for k, v in params.items() if isinstance(v, dict)}
        self.assumed: list[str] = []

    def __call__(self, value: Any, what: str) -> str | None:
        if value in (None, "") or isinstance(value, (dict, list, bool)):
            return None
        text = str(value)
        if _PLACEHOLDER not in text:
            return text
        match = _CHANNEL.fullmatch(text)
        default = self.defaults.get(match.group(1)) if match else None
        if default in (None, "") or isinstance(default, (dict, list, bool)):
            self.assumed.append(f"{what} is a pipeline parameter without a default: unknown here")
            return None
        self.assumed.append(f"{what} is the pipeline's default for {match.group(1)}: {default} (a run may set another)")  # type: ignore[union-attr]
        return str(default)


def _old(value: Any) -> str | None:
    """The float fields of KFP before resourceMemoryLimit: the driver writes them as Go's %v."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _resources(given: dict, values: _Values) -> dict:
    limits: dict[str, str] = {}
    memory = values(given.get("resourceMemoryLimit"), "resourceMemoryLimit")
    if memory is None and _old(given.get("memoryLimit")):
        memory = f"{_old(given.get('memoryLimit'))}G"
    if memory:
        limits["memory"] = memory
    accelerator = _dict(given.get("accelerator"))
    kind = values(accelerator.get("resourceType"), "accelerator.resourceType") or accelerator.get("type")
    count = values(accelerator.get("resourceCount"), "accelerator.resourceCount") or _old(accelerator.get("count"))
    if isinstance(kind, str) and count:
        # a GPU whatever the name KFP was given (nvidia.com/gpu; Vertex's NVIDIA_TESLA_T4 where KFP was told that)
        gpu = re.search(r"gpu|nvidia|amd", kind, re.I) is not None
        limits["nvidia.com/gpu" if gpu and "amd" not in kind.lower() else "amd.com/gpu" if gpu else kind] = count
    return {"limits": limits} if limits else {}


def _mounts(config: dict) -> tuple[list[dict], list[dict]]:
    """(volumes, volumeMounts) of the executor's emptyDirMounts, as the driver makes them; other volumes at
    /dev/shm (a PVC, a generic ephemeral volume) as volumes of their kind, whose size the pipeline does not tell."""
    volumes, mounts = [], []
    for given in _list(config.get("emptyDirMounts")):
        given = _dict(given)
        name, path = given.get("volumeName"), given.get("mountPath")
        if not isinstance(name, str) or not isinstance(path, str):
            continue
        empty_dir = {k: given[k] for k in ("medium", "sizeLimit") if isinstance(given.get(k), str) and given[k]}
        volumes.append({"name": name, "emptyDir": empty_dir})
        mounts.append({"name": name, "mountPath": path})
    for key, kind in (("pvcMount", "persistentVolumeClaim"), ("genericEphemeralVolume", "ephemeral")):
        for given in _list(config.get(key)):
            if at_shm(_dict(given).get("mountPath", "")):
                name = f"kfp-{key}-{len(volumes)}"
                volumes.append({"name": name, kind: {}})
                mounts.append({"name": name, "mountPath": "/dev/shm"})
    return volumes, mounts


def pods(docs: list[Document]) -> list[tuple[Document, str, Any, tuple[str, ...]]]:
    """(a Pod document, the executor's label, the line of its name, notes) for each executor that runs a container;
    an importer or a resolver runs none."""
    spec_doc = next(d for d in docs if is_pipeline(d.body))
    spec = pipeline_spec(spec_doc.body) or {}
    platform = _platform(docs, spec_doc)
    out = []
    executors = _dict(_dict(spec.get("deploymentSpec")).get("executors"))
    for label, executor in executors.items():
        container = _dict(_dict(executor).get("container"))
        if not container:
            continue
        values = _Values(spec)
        config = _dict(platform.get(label))
        volumes, mounts = _mounts(config)
        env = [
            {"name": e["name"], "value": str(e.get("value", ""))}
            for e in _list(container.get("env"))
            if isinstance(e, dict) and isinstance(e.get("name"), str)
        ]
        main = {
            "name": "main",
            "image": values(container.get("image"), "image") or "",
            "command": [*_list(container.get("command")), *_list(container.get("args"))],
            "env": env,
            "resources": _resources(_dict(container.get("resources")), values),
            "volumeMounts": mounts,
        }
        spec_of_pod = {"containers": [main], "volumes": volumes}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": label}, "spec": spec_of_pod}
        notes = tuple(values.assumed)
        if config.get("enabledSharedMemory") is not None and not any(m["mountPath"] == "/dev/shm" for m in mounts):
            notes += (NOT_APPLIED,)
        line = getattr(executors, "key_lines", {}).get(label)  # the executor's name (its ignore comment's line)
        out.append((Document(spec_doc.source, spec_doc.index, pod), str(label), line, notes))
    return out


def renamed(
    found: list[Definition], source: str, label: str, line: int | None, notes: tuple[str, ...]
) -> list[Definition]:
    """The pod's definition named as the executor (file:exec-train), at the executor's line, in KFP's fix form."""
    out = []
    for d in found:
        target = replace(d.facts.target, name=f"{source}:{label}", line=line)
        facts = replace(d.facts, target=target, form="kfp")
        out.append(replace(d, facts=facts, notes=notes + (f"run as KFP's driver makes its pod ({SOURCE})",)))
    return out
