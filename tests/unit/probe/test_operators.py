"""What operators add to the pods they create (shmdoctor/probe/operators.py, docs/operators.md): one case table per
row, each case a rule the operator's source states (KubeRay: ray-operator/controllers/ray/common/pod.go)."""

from __future__ import annotations

import pytest

from shmdoctor.probe import operators
from shmdoctor.sizes import GiB, MiB
from tests.unit.probe.test_kubernetes import workloads

RAY_HEAD = """apiVersion: ray.io/v1
kind: {kind}
metadata: {{name: r}}
spec:
  {nest}headGroupSpec:
  {nest}  rayStartParams: {params}
  {nest}  template:
  {nest}    spec:
  {nest}      containers:
  {nest}        - {{name: ray-head, image: rayproject/ray:2.9.0{resources}{mounts}}}
  {nest}        - {{name: sidecar, image: busybox}}
  {nest}      volumes: {volumes}
"""


def ray(
    kind="RayCluster", params="{}", resources="", mounts="", volumes="[]", api="ray.io/v1"
) -> dict[str, tuple[int | None, str, str]]:
    text = RAY_HEAD.format(kind=kind, params=params, resources=resources, mounts=mounts, volumes=volumes, nest="")
    found, _ = workloads(text.replace("ray.io/v1", api))
    return {n: (d.facts.shm.size_bytes, d.facts.shm.source, d.facts.shm.detail) for n, d in found.items()}


LIMIT = ", resources: {limits: {memory: 12Gi}, requests: {memory: 8Gi}}"
REQUEST = ", resources: {requests: {memory: 54Gi}}"
OWN = ", volumeMounts: [{name: mine, mountPath: /dev/shm}]"
MINE = "[{name: mine, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]"


@pytest.mark.parametrize(
    "case, kwargs, size, added",
    [
        ("the memory limit sizes it, over the request", {"resources": LIMIT}, 12 * GiB, True),
        ("else the memory request", {"resources": REQUEST}, 54 * GiB, True),
        ("neither: no sizeLimit, unknown", {}, None, True),
        (
            "a /dev/shm the template mounts is kept",
            {"resources": LIMIT, "mounts": OWN, "volumes": MINE},
            2 * GiB,
            False,
        ),
        ("plasma-directory: none added", {"resources": LIMIT, "params": "{plasma-directory: /tmp}"}, 64 * MiB, False),
        ("another group's RayCluster is no KubeRay's", {"resources": LIMIT, "api": "example.com/v1"}, 64 * MiB, False),
    ],
)
def test_kuberay_mounts_a_memory_emptydir_sized_from_the_ray_containers_memory(case, kwargs, size, added):
    found = ray(**kwargs)
    head = next(v for n, v in found.items() if n.endswith("/ray-head"))
    sidecar = next(v for n, v in found.items() if n.endswith("/sidecar"))
    assert head[0] == size
    assert head[2].startswith("added by KubeRay") is added, head[2]
    assert sidecar[:2] == (64 * MiB, "runtime-shm")  # only the Ray container (the first) gets it


def test_kuberay_mounts_the_pods_own_shared_mem_volume_where_there_is_one():
    volumes = "[{name: shared-mem, emptyDir: {medium: Memory, sizeLimit: 3Gi}}]"
    head = next(v for n, v in ray(resources=LIMIT, volumes=volumes).items() if n.endswith("/ray-head"))
    assert head[0] == 3 * GiB and head[2].startswith("mounted at /dev/shm by KubeRay")


def test_a_rayjobs_cluster_is_shaped_and_its_submitter_pod_is_a_plain_jobs():
    text = RAY_HEAD.format(kind="RayJob", params="{}", resources=LIMIT, mounts="", volumes="[]", nest="  ")
    found, _ = workloads(text.replace("spec:\n    headGroupSpec", "spec:\n  rayClusterSpec:\n    headGroupSpec", 1))
    (head,) = [d for n, d in found.items() if n.endswith("/ray-head")]
    assert head.facts.shm.size_bytes == 12 * GiB and head.facts.shm.detail.startswith("added by KubeRay")
    text = """apiVersion: ray.io/v1
kind: RayJob
metadata: {name: j}
spec:
  submitterPodTemplate:
    spec:
      containers: [{name: submit, image: rayproject/ray:2.9.0, resources: {limits: {memory: 1Gi}}}]
"""
    (submit,) = workloads(text)[0].values()
    assert (submit.facts.shm.size_bytes, submit.facts.shm.source) == (64 * MiB, "runtime-shm")


def test_the_report_says_which_row_it_assumed():
    found, _ = workloads(
        RAY_HEAD.format(kind="RayService", params="{}", resources=LIMIT, mounts="", volumes="[]", nest="")
    )
    for definition in found.values():
        (note,) = definition.notes
        assert note.startswith("assumed KubeRay (v0.3.0 to v1.7) mounts a memory-backed emptyDir at /dev/shm")
        assert definition.facts.operator_fix and "KubeRay sizes its /dev/shm" in definition.facts.operator_fix


@pytest.mark.parametrize("kind, nest, steps", [("RayClusterFleet", "    ", 2), ("RayClusterReplicaSet", "    ", 1)])
def test_aibrix_becomes_a_raycluster_that_kuberay_shapes_judged_at_the_end_of_the_chain(kind, nest, steps):
    """A RayClusterFleet's template becomes a RayClusterReplicaSet's (createNewReplicaSet), whose spec becomes a
    RayCluster's (constructRayCluster): the pod is KubeRay's, its /dev/shm the Ray container's memory limit."""
    text = RAY_HEAD.format(kind=kind, params="{}", resources=LIMIT, mounts="", volumes="[]", nest=nest)
    text = text.replace("spec:\n      headGroupSpec", "spec:\n  template:\n    spec:\n      headGroupSpec", 1)
    found, _ = workloads(text.replace("ray.io/v1", "orchestration.aibrix.ai/v1alpha1"))
    head = next(d for n, d in found.items() if n.endswith("/ray-head"))
    assert head.facts.shm.size_bytes == 12 * GiB and head.facts.shm.detail.startswith("added by KubeRay")
    (note,) = head.notes
    assert note.count("becomes a ") == steps and "constructRayCluster" in note and "KubeRay" in note


def test_every_row_names_its_source_and_releases():
    for row in operators.OPERATORS:
        assert row.kinds and row.group and row.versions and row.adds
        repository, _, where = row.source.partition(" ")
        assert repository.count("/") == 1 and ":" in where, row.source


LLMISVC = """apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {{name: llm}}
spec:
  model: {{uri: "hf://Qwen/Qwen2.5-7B-Instruct"}}
  template:
    containers:
      - {{name: main, image: vllm/vllm-openai{mounts}}}
    volumes: {volumes}
{worker}"""
WORKER = "  worker:\n    containers:\n      - {name: main, image: vllm/vllm-openai}\n"


@pytest.mark.parametrize(
    "case, mounts, volumes, worker, sizes",
    [
        ("one node: config-llm-template's 1Gi", "", "[]", "", {"llm": 1 * GiB}),
        ("a worker: the data-parallel config's 8Gi", "", "[]", WORKER, {"llm": 8 * GiB, "worker": 8 * GiB}),
        ("a dshm volume of the service's own wins", "", MINE.replace("mine", "dshm"), "", {"llm": 2 * GiB}),
        ("its own mount at /dev/shm wins", OWN, MINE, "", {"llm": 2 * GiB}),
    ],
)
def test_kserve_llm_inference_service_gets_its_configs_dshm(case, mounts, volumes, worker, sizes):
    found, _ = workloads(LLMISVC.format(mounts=mounts, volumes=volumes, worker=worker))
    assert {n.rsplit("/", 1)[1]: d.facts.shm.size_bytes for n, d in found.items()} == sizes


FLUX_RUNTIME = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: flux-runtime}
spec:
  mlPolicy: {numNodes: 2, flux: {numProcPerNode: 1}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers: [{name: node, image: ghcr.io/converged-computing/lammps-reax:ubuntu2204}]
"""


def test_kubeflow_trainers_flux_policy_mounts_a_read_only_unsized_shm():
    (node,) = workloads(FLUX_RUNTIME)[0].values()
    assert node.facts.shm.read_only and node.facts.shm.size_bytes is None
    assert node.facts.shm.detail.startswith("added by Kubeflow Trainer's flux policy")
    (plain,) = workloads(FLUX_RUNTIME.replace(", flux: {numProcPerNode: 1}", ""))[0].values()
    assert (plain.facts.shm.size_bytes, plain.facts.shm.read_only) == (64 * MiB, False)


@pytest.mark.parametrize(
    "api, kind",
    [("kubeflow.org/v1", "PyTorchJob"), ("kubeflow.org/v2beta1", "MPIJob"), ("jobset.x-k8s.io/v1alpha2", "JobSet")],
)
def test_operators_that_add_nothing_are_said_and_leave_the_pod_as_written(api, kind):
    text = (
        f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: j}}\nspec:\n  template:\n    spec:\n"
        "      containers: [{name: c, image: pytorch/pytorch}]\n"
    )
    (job,) = workloads(text)[0].values()
    assert job.facts.shm.size_bytes == 64 * MiB and job.notes[0].endswith(operators.NOTHING)


def test_docs_operators_md_has_every_row_with_its_source():
    from tests.helpers import REPO

    table = (REPO / "docs" / "operators.md").read_text()
    for row in operators.OPERATORS:
        assert f"{row.name} (`{row.group}`: {', '.join(row.kinds)})" in table and row.source.split(" ", 1)[1] in table


def test_a_shaped_container_keeps_its_line():
    found, _ = workloads(
        RAY_HEAD.format(kind="RayCluster", params="{}", resources=LIMIT, mounts="", volumes="[]", nest="")
    )
    head = next(d for n, d in found.items() if n.endswith("/ray-head"))
    assert head.facts.target.line == 10  # the container's own line, as for a pod no operator shapes


def test_kuberays_shm_is_the_memory_limit_by_design_not_a_warning():
    from shmdoctor.rules import judge

    found, _ = workloads(
        RAY_HEAD.format(kind="RayCluster", params="{}", resources=LIMIT, mounts="", volumes="[]", nest="")
    )
    head = next(d for n, d in found.items() if n.endswith("/ray-head"))
    assert head.facts.shm.size_bytes == head.facts.memory.limit_bytes == 12 * GiB
    assert [f.id for f in judge(head.facts, None).findings] == []  # the operator sized it so: not shm-over-memory
    own = MINE.replace("sizeLimit: 2Gi", "sizeLimit: 12Gi")  # the same size, written by the user: warned
    mine = next(
        v
        for n, v in workloads(
            RAY_HEAD.format(kind="RayCluster", params="{}", resources=LIMIT, mounts=OWN, volumes=own, nest="")
        )[0].items()
        if n.endswith("/ray-head")
    )
    assert [f.id for f in judge(mine.facts, None).findings] == ["shm-over-memory"]


def test_a_multi_model_runtime_is_modelmeshs_pod_and_says_so():
    """A ServingRuntime with multiModel: true runs as modelmesh-serving's Deployment (its containers and volumes,
    a models-dir emptyDir on disk, its sidecars: nothing at /dev/shm), said as ModelMesh's row; without it, KServe's.
    kserve/modelmesh-serving config/runtimes/triton-2.x.yaml's shape (9c7a2b7)."""
    text = (
        "apiVersion: serving.kserve.io/v1alpha1\nkind: ServingRuntime\nmetadata: {name: triton-2.x}\n"
        "spec:\n  multiModel: true\n  supportedModelFormats: [{name: onnx, version: '1', autoSelect: true}]\n"
        "  containers: [{name: triton, image: nvcr.io/nvidia/tritonserver:23.04-py3, command: [tritonserver]}]\n"
    )
    (mesh,) = workloads(text)[0].values()
    assert mesh.facts.shm.size_bytes == 64 * MiB and mesh.notes[0].startswith("assumed ModelMesh (v0.9.0 to 9c7a2b7)")
    (single,) = workloads(text.replace("multiModel: true", "multiModel: false"))[0].values()
    assert single.notes[0].startswith("assumed KServe (v0.20)")
