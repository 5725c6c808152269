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
from .documents import with_changes


@dataclass
class Shaped:
    """A pod spec as the operator will shape it: a copy of the template's, with what the operator added and why."""

    spec: dict  # the pod spec (containers, volumes), with the operator's volumes and mounts added
    added: dict[str, str]  # volume name -> why it is there ("added by KubeRay: ...")


# (the object, where the template sits in it, the mapping that holds the template (a Ray group spec), the pod spec)
# -> the pod that runs, or None where the operator leaves this one as written
Shape = Callable[[dict, tuple[str, ...], Any, dict], Shaped | None]


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
    via: tuple[tuple[str, str], ...] = ()  # an operator over another's: (what each step makes, the source line)
    when: Callable[[dict], bool] | None = None  # which of its kinds' objects it holds for (None: every one)

    def assumed(self) -> str:
        """What the report says it assumed: the operator, the releases read, what it adds (docs/operators.md); for
        a chain, each resource it becomes first."""
        chain = "".join(f"becomes a {made} ({line}), " for made, line in self.via)
        return f"{self.name} ({self.versions}) {chain}{self.adds}"


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


def _kuberay(obj: dict, path: tuple[str, ...], holder: Any, spec: dict) -> Shaped | None:
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
    ray = with_changes(ray, volumeMounts=[*mounts, {"name": KUBERAY_SHM, "mountPath": SHM}])
    return Shaped(with_changes(spec, containers=[ray, *containers[1:]], volumes=volumes), added)


def _container(spec: dict, name: str) -> int | None:
    return next((i for i, c in enumerate(spec["containers"]) if c.get("name") == name), None)


def _with_shm(spec: dict, index: int, volume: dict, mount: dict, why: str) -> Shaped:
    """The spec with `volume` (unless the pod has one of its name: the pod's is merged over it) and `mount` on
    container `index`."""
    volumes: list = spec["volumes"] if isinstance(spec.get("volumes"), list) else []
    own = next((v for v in volumes if isinstance(v, dict) and v.get("name") == volume["name"]), None)
    volumes = [*volumes] if own else [*volumes, volume]
    container = spec["containers"][index]
    mounts: list = container["volumeMounts"] if isinstance(container.get("volumeMounts"), list) else []
    containers = [*spec["containers"]]
    containers[index] = with_changes(container, volumeMounts=[*mounts, mount])
    return Shaped(with_changes(spec, containers=containers, volumes=volumes), {volume["name"]: why})


def _llm_inference_service(obj: dict, path: tuple[str, ...], holder: Any, spec: dict) -> Shaped | None:
    """combineBaseRefsConfig merges a well-known LLMInferenceServiceConfig under the service's own spec (a strategic
    merge: containers by name, volumes by name, mounts by path): config-llm-template (and the prefill and decode
    ones) mount a memory emptyDir 'dshm' of 1Gi at /dev/shm in the 'main' container; with a `worker` (multi-node
    data parallel) the *-worker-data-parallel configs mount 8Gi, in the template and the worker."""
    main = _container(spec, "main")
    if main is None or _mounts_shm(spec["containers"][main]) or path[-1:] not in (("template",), ("worker",)):
        return None
    size = "8Gi" if isinstance(holder, dict) and holder.get("worker") else "1Gi"
    why = f"added by KServe's well-known config (memory-backed, sizeLimit {size}; a 'dshm' volume of yours wins)"
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}}
    return _with_shm(spec, main, volume, {"name": "dshm", "mountPath": SHM}, why)


def _trainer_flux(obj: dict, path: tuple[str, ...], holder: Any, spec: dict) -> Shaped | None:
    """Flux.EnforceMLPolicy, where the runtime's mlPolicy has flux: the 'node' replicated job's 'node' container
    gets a memory emptyDir 'shared-memory' at /dev/shm, read-only, without sizeLimit (getViewVolumes)."""
    policy = obj["spec"].get("mlPolicy") if isinstance(obj.get("spec"), dict) else None
    if not isinstance(policy, dict) or policy.get("flux") is None:
        return None
    node = _container(spec, "node")
    if "node" not in path or node is None or _mounts_shm(spec["containers"][node]):
        return None
    volume = {"name": "shared-memory", "emptyDir": {"medium": "Memory"}}
    why = "added by Kubeflow Trainer's flux policy (memory-backed, mounted read-only, no size)"
    return _with_shm(spec, node, volume, {"name": "shared-memory", "mountPath": SHM, "readOnly": True}, why)


NOTHING = "adds nothing to /dev/shm, IPC or memory: the pod runs as its template says"

KUBERAY_ADDS = (
    "mounts a memory-backed emptyDir at /dev/shm in the Ray container, sized from its memory limit, else its "
    "request; not where that container mounts /dev/shm, nor (v1.6.0 on) where rayStartParams sets plasma-directory"
)
KUBERAY_FIX = (
    "KubeRay sizes its /dev/shm from the Ray container's memory limit (else its request): raise it, or mount "
    "your own emptyDir at /dev/shm in the group's template (KubeRay then adds none)"
)
KUBERAY_SOURCE = (
    "ray-project/kuberay ray-operator/controllers/ray/common/pod.go: BuildPod, addEmptyDir, makeEmptyDirVolume, "
    "findMemoryReqOrLimit"
)
# AIBrix (vllm-project/aibrix e3e10f9e, v0.7): a RayClusterFleet makes RayClusterReplicaSets of its template, and a
# RayClusterReplicaSet makes RayClusters of its template's spec, which KubeRay turns into pods.
AIBRIX_REPLICA_SET = (
    "RayClusterReplicaSet",
    "pkg/controller/rayclusterfleet/rayclusterfleet_controller.go createNewReplicaSet: Template: d.Spec.Template",
)
AIBRIX_RAY_CLUSTER = (
    "RayCluster, run by KubeRay",
    "pkg/controller/rayclusterreplicaset/rayclusterreplicaset_utils.go constructRayCluster: "
    "Spec: replicaset.Spec.Template.Spec",
)

OPERATORS: tuple[Operator, ...] = (
    Operator(
        "KubeRay",
        "ray.io",
        ("RayCluster", "RayJob", "RayService"),
        "v0.3.0 to v1.7",
        KUBERAY_ADDS,
        KUBERAY_SOURCE,
        _kuberay,
        KUBERAY_FIX,
    ),
    Operator(
        "AIBrix",
        "orchestration.aibrix.ai",
        ("RayClusterFleet",),
        "v0.7; KubeRay v0.3.0 to v1.7",
        KUBERAY_ADDS,
        KUBERAY_SOURCE,
        _kuberay,
        KUBERAY_FIX,
        via=(AIBRIX_REPLICA_SET, AIBRIX_RAY_CLUSTER),
    ),
    Operator(
        "AIBrix",
        "orchestration.aibrix.ai",
        ("RayClusterReplicaSet",),
        "v0.7; KubeRay v0.3.0 to v1.7",
        KUBERAY_ADDS,
        KUBERAY_SOURCE,
        _kuberay,
        KUBERAY_FIX,
        via=(AIBRIX_RAY_CLUSTER,),
    ),
    Operator(
        "KServe",
        "serving.kserve.io",
        ("LLMInferenceService",),
        "v0.16.0 to v0.20",
        "merges a well-known config that mounts a memory-backed emptyDir 'dshm' at /dev/shm in the 'main' container: "
        "1Gi, 8Gi with a worker (data parallel); not where 'main' mounts /dev/shm",
        "kserve/kserve pkg/controller/v1alpha2/llmisvc/config_merge.go: combineBaseRefsConfig; "
        "config/llmisvcconfig/config-llm-template.yaml, config-llm-worker-data-parallel.yaml",
        _llm_inference_service,
        "KServe's config mounts 'dshm' at /dev/shm: a 'dshm' volume in the service's template overrides its size",
    ),
    Operator(
        "ModelMesh",
        "serving.kserve.io",
        ("ServingRuntime", "ClusterServingRuntime"),
        "v0.9.0 to 9c7a2b7",
        NOTHING + " (with multiModel: true, modelmesh-serving's Deployment: the runtime's containers and volumes, a "
        "models-dir emptyDir on disk, its mm, rest-proxy and puller sidecars)",
        "kserve/modelmesh-serving controllers/modelmesh/runtime.go: addVolumesToDeployment, addRuntimeToDeployment",
        when=lambda obj: isinstance(obj.get("spec"), dict) and obj["spec"].get("multiModel") is True,
    ),
    Operator(
        "KServe",
        "serving.kserve.io",
        ("InferenceService", "ServingRuntime", "ClusterServingRuntime", "InferenceGraph"),
        "v0.20",
        NOTHING,
        "kserve/kserve pkg/webhook/admission/pod: mutator (storage initializer, agent, batcher: no /dev/shm)",
    ),
    Operator(
        "Kubeflow Trainer",
        "trainer.kubeflow.org",
        ("TrainingRuntime", "ClusterTrainingRuntime"),
        "v2.3.0",
        "with mlPolicy flux, mounts a memory-backed emptyDir at /dev/shm, read-only and unsized, in the 'node' "
        "container; otherwise nothing",
        "kubeflow/trainer pkg/runtime/framework/plugins/flux/flux.go: EnforceMLPolicy, getViewVolumes",
        _trainer_flux,
    ),
    Operator(
        "Kubeflow Trainer",
        "trainer.kubeflow.org",
        ("TrainJob",),
        "v2.3.0",
        NOTHING + " (its runtime's)",
        "kubeflow/trainer pkg/runtime/framework/plugins: torch, mpi, jobset (no /dev/shm)",
    ),
    Operator(
        "Kubeflow training-operator",
        "kubeflow.org",
        ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob"),
        "v1.9.0",
        NOTHING,
        "kubeflow/training-operator pkg/controller.v1/common/pod.go: ReconcilePods, createNewPod (no /dev/shm)",
    ),
    Operator(
        "MPI operator",
        "kubeflow.org",
        ("MPIJob",),
        "v0.8.0",
        NOTHING,
        "kubeflow/mpi-operator pkg/controller/mpi_job_controller.go: newLauncherPodTemplate, newWorker (no /dev/shm)",
    ),
    Operator(
        "LeaderWorkerSet",
        "leaderworkerset.x-k8s.io",
        ("LeaderWorkerSet",),
        "v0.10.0",
        NOTHING,
        "kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go: SSAWithStatefulset; "
        "pkg/webhooks/pod_webhook.go (no /dev/shm)",
    ),
    Operator(
        "JobSet",
        "jobset.x-k8s.io",
        ("JobSet",),
        "v0.12",
        NOTHING,
        "kubernetes-sigs/jobset pkg/controllers/jobset_controller.go: constructJob (no /dev/shm)",
    ),
    Operator(
        "Volcano",
        "batch.volcano.sh",
        ("Job",),
        "v1.15.1",
        NOTHING,
        "volcano-sh/volcano pkg/controllers/job/job_controller_util.go: createJobPod (no /dev/shm)",
    ),
    Operator(
        "Kubeflow Notebooks",
        "kubeflow.org",
        ("Notebook",),
        "v1.10.0",
        NOTHING + " (the web app's 'shm' option writes a dshm volume into the Notebook itself)",
        "kubeflow/kubeflow components/notebook-controller/controllers/notebook_controller.go: generateStatefulSet",
    ),
    Operator(
        "Seldon Core",
        "mlops.seldon.io",
        ("Server", "ServerConfig"),
        "v2 (7b77f8b7)",
        NOTHING + "; a Server without podSpec takes its ServerConfig's (the default 'triton' one mounts 256Mi)",
        "SeldonIO/seldon-core operator/controllers/mlops/server_controller.go: ServerReconciler; "
        "k8s/yaml/components.yaml",
    ),
)


def operator(obj: dict) -> Operator | None:
    """The row for an object's API group and kind, or None: a resource no row names runs as its template says."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    found = (o for o in OPERATORS if o.group == group and obj.get("kind") in o.kinds)
    return next((o for o in found if o.when is None or o.when(obj)), None)
