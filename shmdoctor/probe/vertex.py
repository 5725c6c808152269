"""Vertex AI files -> Facts: a CustomJob's worker pools, and a Model's serving container.

A CustomJob (`gcloud ai custom-jobs create --config`: a CustomJobSpec with `workerPoolSpecs`; the REST body with
`jobSpec`; a HyperparameterTuningJob's `trialJobSpec`; a TrainingPipeline's `trainingTaskInputs`) has no /dev/shm
setting: WorkerPoolSpec is machineSpec, replicaCount, containerSpec or pythonPackageSpec, diskSpec, nfsMounts (the
Vertex AI v1 API reference). What its containers get is not in the file: said, with the one thing to check, where
the pool looks like it loads data (an ML image or command, GPUs). A Model's serving container (`containerSpec` with
`imageUri`, as `gcloud ai models upload` and models.upload take it) has `sharedMemorySizeMb`: "the default shared
memory size is 64MB" (cloud.google.com/vertex-ai/docs/predictions/deploy-genai). Each field is read under its JSON
name or its proto name (`workerPoolSpecs` or `worker_pool_specs`): the API's JSON takes both (protobuf's JSON mapping:
"parsers accept both the lowerCamelCase name ... and the original proto field name"), as the Python SDK's dicts
are written.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import UsageError
from ..model import ENGINE_DEFAULT_SHM, SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Shm
from ..sizes import MiB
from .documents import Definition, Document, target, where
from .workload import env_pairs, idle, ml_signs, nccl_env, serving

DEFAULT = "Vertex AI's default, 64MB (its docs: predictions/deploy-genai)"
CHECK = (
    "a Vertex AI CustomJob has no setting for it (WorkerPoolSpec: machineSpec, containerSpec, diskSpec, nfsMounts):"
    " print `df -h /dev/shm` from the job to know what it got"
)
_SERVING_KEYS = ("predictRoute", "healthRoute", "ports", "sharedMemorySizeMb", "grpcPorts", "deploymentTimeout")


def _get(holder: Any, name: str) -> Any:
    """A field under its JSON name (`imageUri`), else its proto name (`image_uri`)."""
    if not isinstance(holder, dict):
        return None
    found = holder.get(name)
    return found if found is not None else holder.get(re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name))


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def pools(body: Any) -> list | None:
    """A CustomJob's worker pools, wherever the file holds its CustomJobSpec; None where it holds none."""
    if not isinstance(body, dict):
        return None
    for holder in (body, _get(body, "jobSpec"), _get(body, "trialJobSpec"), _get(body, "trainingTaskInputs")):
        found = _get(holder, "workerPoolSpecs")
        if isinstance(found, (list, dict)):  # gcloud's --config takes one pool as a mapping too
            return found if isinstance(found, list) else [found]
    return None


def model_container(body: Any) -> dict | None:
    """A Model's serving containerSpec (the Model, or an upload request's `model`); None where there is none."""
    if not isinstance(body, dict):
        return None
    for holder in (body, body.get("model")):
        spec = _dict(_get(holder, "containerSpec"))
        if isinstance(_get(spec, "imageUri"), str) and any(_get(spec, k) is not None for k in _SERVING_KEYS):
            return spec
    return None


def is_vertex(body: Any) -> bool:
    return pools(body) is not None or model_container(body) is not None


def _count(value: Any) -> str | None:
    text = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    return text if text.isdigit() and int(text) > 0 else None


def _pool(doc: Document, index: int, pool: dict) -> Definition:
    container = _dict(_get(pool, "containerSpec"))
    package = _dict(_get(pool, "pythonPackageSpec"))
    image = _get(container, "imageUri") or _get(package, "executorImageUri")
    command = [*_list(container.get("command")), *_list(container.get("args")), *_list(package.get("args"))]
    module = _get(package, "pythonModule")
    env = env_pairs(container.get("env") or package.get("env"))
    gpus = _count(_get(_get(pool, "machineSpec"), "acceleratorCount"))
    signs = ml_signs(image, command, [module] if isinstance(module, str) else None)
    name = f"workerPoolSpecs[{index}]"
    return Definition(
        Facts(
            target=target("workload", doc.source, name, pool),
            shm=Shm.unmeasured(None, "unknown", "a Vertex AI CustomJob's container: no /dev/shm setting"),
            ipc=Ipc("private"),
            memory=Memory(None, None),
            runtime="container",
            gpus=gpus,
            ml_signs=signs,
            server=serving(image, command, None, env=container.get("env")),
            flags=idle(image, command),
            nccl_env=nccl_env(env),
            unreadable=(f"{SHM_SIZE_UNKNOWN} ({CHECK})",) if signs or gpus else (),
            form="vertex",
        )
    )


def _model(doc: Document, spec: dict) -> Definition:
    holder = doc.body.get("model") if isinstance(doc.body.get("model"), dict) else doc.body
    name = f"Model/{_get(holder, 'displayName') or 'model'}"
    written = _get(spec, "sharedMemorySizeMb")
    if written is None:
        shm = Shm.unmeasured(ENGINE_DEFAULT_SHM, "runtime-shm", f"no sharedMemorySizeMb: {DEFAULT}")
    elif _count(written) is None:
        said = f"sharedMemorySizeMb must be a count of MB, not {written!r}"[:200]
        raise UsageError(f"{where(doc.source, spec)}: {name}: {said}")
    else:
        shm = Shm.unmeasured(int(str(written)) * MiB, "docker-shm", f"containerSpec.sharedMemorySizeMb: {written}")
    image, command, args = _get(spec, "imageUri"), spec.get("command"), spec.get("args")
    env = env_pairs(spec.get("env"))
    return Definition(
        Facts(
            target=target("workload", doc.source, name, holder),
            shm=shm,
            ipc=Ipc("private"),
            memory=Memory(None, None),
            runtime="container",
            ml_signs=ml_signs(image, command, args),
            server=serving(image, command, args, env=spec.get("env")),
            nccl_env=nccl_env(env),
            form="vertex",
        )
    )


def probe(doc: Document) -> list[Definition]:
    """A Definition for each worker pool that runs (an empty pool, which the API allows past the first, does
    not), or the Model's serving container."""
    found = pools(doc.body)
    if found is None:
        return [_model(doc, model_container(doc.body) or {})]
    return [_pool(doc, i, pool) for i, pool in enumerate(found) if isinstance(pool, dict) and pool]
