"""What operators add to the pods they create, read in each operator's own source: one table, applied in one place
(kubernetes._Pod) after a pod template is found and before the rules see its facts.

A custom resource's pod template is not the pod that runs: KubeRay mounts a memory-backed emptyDir at /dev/shm in
the Ray container, KServe's LLMInferenceService merges a config that mounts one. Each row says which resources it
holds for (API group and kinds), the releases it was read in, what the operator adds to /dev/shm, IPC or memory and
when it skips it, and where in the source that is (docs/operators.md has the table in words). A row that adds
nothing is a fact too: the report says which row it assumed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..model import SHM


@dataclass
class Shaped:
    """A pod spec as the operator will shape it: a copy of the template's, with what the operator added and why."""

    spec: dict  # the pod spec (containers, volumes), with the operator's volumes and mounts added
    added: dict[str, str]  # volume name -> why it is there ("added by KubeRay: ...")


# (where the template sits, the mapping that holds it (a Ray group spec), the pod spec) -> the pod that runs, or
# None where the operator leaves this one as written
Shape = Callable[[tuple[str, ...], Any, dict], Shaped | None]


@dataclass(frozen=True)
class Operator:
    name: str
    group: str  # the API group of apiVersion (ray.io/v1 -> ray.io)
    kinds: tuple[str, ...]
    versions: str  # the releases the row was read in
    adds: str  # what it adds to /dev/shm, IPC or memory, in words ("nothing" is a finding too)
    source: str  # repository: file: function
    shape: Shape | None = None  # None: the pod runs as its template says
    fix: str = ""  # where a /dev/shm fix goes, in the operator's own terms

    def assumed(self) -> str:
        """What the report says it assumed: the operator, the releases read, what it adds (docs/operators.md)."""
        return f"{self.name} ({self.versions}) {self.adds}"


def _mounts_shm(container: dict) -> bool:
    mounts = container.get("volumeMounts")
    return isinstance(mounts, list) and any(isinstance(m, dict) and m.get("mountPath") == SHM for m in mounts)


def _memory(container: dict) -> Any:
    """KubeRay's findMemoryReqOrLimit: the container's memory limit, else its request, else None."""
    resources = container.get("resources")
    for key in ("limits", "requests"):
        values = resources.get(key) if isinstance(resources, dict) else None
        if isinstance(values, dict) and values.get("memory") not in (None, ""):
            return values["memory"]
    return None


KUBERAY_SHM = "shared-mem"  # SharedMemoryVolumeName


def _kuberay(path: tuple[str, ...], holder: Any, spec: dict) -> Shaped | None:
    """BuildPod: unless rayStartParams sets plasma-directory, addEmptyDir(containers[0], "shared-mem", /dev/shm,
    Memory): nothing where that container already mounts /dev/shm (checkIfVolumeMounted, the path compared as
    written); the volume is made only where the pod has none of that name (checkIfVolumeExists), with sizeLimit
    from the container's memory limit, else its request, else none (makeEmptyDirVolume, findMemoryReqOrLimit).
    Head and worker groups only: a RayJob's submitter pod is a plain Job's."""
    if "headGroupSpec" not in path and "workerGroupSpecs" not in path:
        return None
    params = holder.get("rayStartParams") if isinstance(holder, dict) else None
    if isinstance(params, dict) and "plasma-directory" in params:
        return None
    containers = spec["containers"]
    ray = containers[0]
    if _mounts_shm(ray):
        return None
    volumes: list = spec["volumes"] if isinstance(spec.get("volumes"), list) else []
    added = {KUBERAY_SHM: "mounted at /dev/shm by KubeRay in the Ray container (the pod's own 'shared-mem' volume)"}
    if not any(isinstance(v, dict) and v.get("name") == KUBERAY_SHM for v in volumes):
        memory = _memory(ray)
        empty_dir: dict[str, Any] = {"medium": "Memory"}
        if memory is not None:
            empty_dir["sizeLimit"] = memory
        volumes = [*volumes, {"name": KUBERAY_SHM, "emptyDir": empty_dir}]
        sized = "sized from the Ray container's memory limit, else its request" if memory is not None else "no size"
        added[KUBERAY_SHM] = f"added by KubeRay to the Ray container (memory-backed, {sized})"
    mounts: list = ray["volumeMounts"] if isinstance(ray.get("volumeMounts"), list) else []
    ray = {**ray, "volumeMounts": [*mounts, {"name": KUBERAY_SHM, "mountPath": SHM}]}
    return Shaped({**spec, "containers": [ray, *containers[1:]], "volumes": volumes}, added)


OPERATORS: tuple[Operator, ...] = (
    Operator(
        "KubeRay",
        "ray.io",
        ("RayCluster", "RayJob", "RayService"),
        "v0.3.0 to v1.7",
        "mounts a memory-backed emptyDir at /dev/shm in the Ray container, sized from its memory limit, else its "
        "request; not where that container mounts /dev/shm, nor (v1.6.0 on) where rayStartParams sets "
        "plasma-directory",
        "ray-project/kuberay ray-operator/controllers/ray/common/pod.go: BuildPod, addEmptyDir, makeEmptyDirVolume, "
        "findMemoryReqOrLimit",
        _kuberay,
        "KubeRay sizes its /dev/shm from the Ray container's memory limit (else its request): raise it, or mount "
        "your own emptyDir at /dev/shm in the group's template (KubeRay then adds none)",
    ),
)


def operator(obj: dict) -> Operator | None:
    """The row for an object's API group and kind, or None: a resource no row names runs as its template says."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return next((o for o in OPERATORS if o.group == group and obj.get("kind") in o.kinds), None)
