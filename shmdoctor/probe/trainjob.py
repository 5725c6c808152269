"""Kubeflow Trainer's TrainJob -> the Facts of its trainer node, judged as the pod its runtime makes.

A TrainJob runs as its runtime's template (`spec.runtimeRef`: a ClusterTrainingRuntime by default, or a
TrainingRuntime): the replicated job labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer` (else the one
named `node`), its `node` container given the TrainJob's `trainer` image, command, args, env and resourcesPerNode,
and the pod patched by `runtimePatches` (volumes, containers' volumeMounts). The runtime is the one of that name in
the same run, else the one Kubeflow ships under that name (kubeflow/trainer manifests/base/runtimes at 8c0f5059:
none mounts anything at /dev/shm), said as assumed; a runtime neither is passed over, saying so.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from .documents import Definition, Document, line_of

KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
GROUP = "trainer.kubeflow.org"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
SOURCE = "kubeflow/trainer manifests/base/runtimes (8c0f5059)"
# The runtimes Kubeflow ships: the trainer's `node` image; none mounts anything at /dev/shm.
SHIPPED = {
    "torch-distributed": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    "torch-distributed-with-cache": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    "deepspeed-distributed": "ghcr.io/kubeflow/trainer/deepspeed-runtime",
    "mlx-distributed": "ghcr.io/kubeflow/trainer/mlx-runtime",
    "jax-distributed": "nvcr.io/nvidia/jax:25.10-py3",
    "xgboost-distributed": "ghcr.io/kubeflow/trainer/xgboost-runtime",
    "torchtune-llama3.2-1b": "ghcr.io/kubeflow/trainer/torchtune-trainer",
    "torchtune-llama3.2-3b": "ghcr.io/kubeflow/trainer/torchtune-trainer",
    "torchtune-qwen2.5-1.5b": "ghcr.io/kubeflow/trainer/torchtune-trainer",
}


def _group(body: Any) -> str:
    return str(body.get("apiVersion", "")).rpartition("/")[0] if isinstance(body, dict) else ""


def is_trainjob(body: Any) -> bool:
    return _group(body) == GROUP and body.get("kind") == "TrainJob"


def is_runtime(body: Any) -> bool:
    return _group(body) == GROUP and body.get("kind") in KINDS


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _trainer_job(runtime: dict) -> tuple[str, dict] | None:
    """(name, pod spec) of the runtime's replicated job that runs the trainer."""
    template = _dict(_dict(runtime.get("spec")).get("template"))
    jobs = [j for j in _list(_dict(template.get("spec")).get("replicatedJobs")) if isinstance(j, dict)]
    labels = [_dict(_dict(_dict(j.get("template")).get("metadata")).get("labels")) for j in jobs]
    labelled = [j for j, label in zip(jobs, labels) if label.get(ANCESTOR) == "trainer"]
    chosen = labelled or [j for j in jobs if j.get("name") == "node"]
    if not chosen:
        return None
    job = chosen[0]
    spec = _dict(_dict(_dict(_dict(job.get("template")).get("spec")).get("template")).get("spec"))
    return str(job.get("name")), copy.deepcopy(spec)


def resolve(doc: Document, runtimes: dict[tuple[str, str], dict]) -> tuple[Document | None, str]:
    """The pod the TrainJob's trainer runs as (a Pod document of that spec, named after the TrainJob), and a note
    that says where the runtime came from; (None, why) where it cannot be told."""
    job = doc.body
    name = str(_dict(job.get("metadata")).get("name") or "trainjob")
    ref = _dict(_dict(job.get("spec")).get("runtimeRef"))
    kind, runtime_name = str(ref.get("kind") or "ClusterTrainingRuntime"), str(ref.get("name") or "")
    runtime = runtimes.get((kind, runtime_name))
    if runtime is not None:
        found = _trainer_job(runtime)
        note = f"TrainJob run as its runtime {kind}/{runtime_name} of this run"
    elif runtime_name in SHIPPED:
        found = ("node", {"containers": [{"name": "node", "image": SHIPPED[runtime_name]}]})
        note = f"assumed {kind}/{runtime_name} as Kubeflow ships it ({SOURCE}: nothing at /dev/shm)"
    else:
        why = "is neither in this run nor one Kubeflow ships: give its file too"
        return None, f"{doc.source}:TrainJob/{name}: its runtime {kind}/{runtime_name} {why}"
    if found is None:
        return None, f"{doc.source}:TrainJob/{name}: its runtime {kind}/{runtime_name} has no trainer job to run"
    job_name, spec = found
    _override(spec, _dict(_dict(job.get("spec")).get("trainer")))
    for patch in _list(_dict(job.get("spec")).get("runtimePatches")):
        _patch(spec, job_name, _dict(patch))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    return Document(doc.source, doc.index, pod), note


def _node(spec: dict) -> dict:
    containers = spec.setdefault("containers", [])
    node = next((c for c in containers if isinstance(c, dict) and c.get("name") == "node"), None)
    if node is None:
        node = {"name": "node"}
        containers.append(node)
    return node


def _override(spec: dict, trainer: dict) -> None:
    """The TrainJob's `trainer` over the runtime's `node` container, as Trainer's plugins apply it."""
    node = _node(spec)
    for key in ("image", "command", "args"):
        if trainer.get(key) is not None:
            node[key] = trainer[key]
    if isinstance(trainer.get("env"), list):
        node["env"] = [*_list(node.get("env")), *trainer["env"]]
    if isinstance(trainer.get("resourcesPerNode"), dict):
        node["resources"] = trainer["resourcesPerNode"]


def _patch(spec: dict, job_name: str, patch: dict) -> None:
    """A runtimePatch's pod spec for the trainer's job: its volumes added, its containers' mounts and env added."""
    template = _dict(_dict(patch.get("trainingRuntimeSpec")).get("template"))
    for job in _list(_dict(template.get("spec")).get("replicatedJobs")):
        if not isinstance(job, dict) or job.get("name") != job_name:
            continue
        pod = _dict(_dict(_dict(_dict(job.get("template")).get("spec")).get("template")).get("spec"))
        spec["volumes"] = [*_list(spec.get("volumes")), *_list(pod.get("volumes"))]
        for given in _list(pod.get("containers")):
            if not isinstance(given, dict):
                continue
            containers = spec.setdefault("containers", [])
            own = next((c for c in containers if isinstance(c, dict) and c.get("name") == given.get("name")), None)
            if own is None:
                continue  # a patch names containers the runtime has
            for key in ("volumeMounts", "env"):
                if isinstance(given.get(key), list):
                    own[key] = [*_list(own.get(key)), *given[key]]
            if isinstance(given.get("resources"), dict):
                own["resources"] = given["resources"]


def renamed(found: list[Definition], doc: Document, note: str) -> list[Definition]:
    """The pod's definitions named as the TrainJob's trainer nodes, at the TrainJob's line, with the note."""
    name = str(_dict(doc.body.get("metadata")).get("name") or "trainjob")
    out = []
    for d in found:
        parts = d.facts.target.name[len(doc.source) + 1 :].split("/")  # Pod/NAME[/CONTAINER]
        container = parts[2] if len(parts) > 2 else "node"
        target = replace(d.facts.target, name=f"{doc.source}:TrainJob/{name}/{container}", line=line_of(doc.body))
        out.append(replace(d, facts=replace(d.facts, target=target), notes=d.notes + (note,)))
    return out
