"""Kubernetes manifests -> Facts: pod templates found wherever they nest, /dev/shm as the kubelet sizes it."""

from __future__ import annotations

import json

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.probe import documents, kubernetes
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA as TEST_DATA

DATA = TEST_DATA / "manifests"


def workloads(text: str, source: str = "pod.yaml") -> tuple[dict, list[str]]:
    found, passed_over = {}, []
    for doc in documents.parse(text, source):
        defs, skipped = kubernetes.probe(doc)
        found.update({d.facts.target.name.split(":", 1)[1]: d for d in defs})
        passed_over += skipped
    return found, passed_over


def pod(
    spec_yaml: str, containers: str = "- {name: main, image: x, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}"
):
    text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + "\n".join(
        "  " + line
        for line in (
            "containers:\n" + "\n".join("  " + c for c in containers.splitlines()) + "\n" + spec_yaml
        ).splitlines()
    )
    return workloads(text)[0]


MOUNTED = (
    "- {name: main, image: x, volumeMounts: [{name: dshm, mountPath: /dev/shm}], resources: {limits: {memory: %s}}}"
)

# (pod spec beyond containers, containers, size, source, unknown said)
CASES = [
    ("", "- {name: main, image: x}", 64 * MiB, "runtime-shm", False),
    (
        "volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]",
        MOUNTED % "8Gi",
        2 * GiB,
        "k8s-emptydir",
        False,
    ),
    # sizeLimit above the pod's memory limits: the limits cap it
    (
        "volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}]",
        MOUNTED % "3Gi",
        3 * GiB,
        "k8s-emptydir",
        False,
    ),
    # no sizeLimit: as large as the pod's memory limits ...
    ("volumes: [{name: dshm, emptyDir: {medium: Memory}}]", MOUNTED % "768Mi", 768 * MiB, "k8s-emptydir", False),
    # ... which are the sum of its containers' limits
    (
        "volumes: [{name: dshm, emptyDir: {medium: Memory}}]",
        (MOUNTED % "1Gi") + "\n- {name: side, image: y, resources: {limits: {memory: 512Mi}}}",
        1536 * MiB,
        "k8s-emptydir",
        False,
    ),
    # ... and unknown with no limits (the node's memory)
    (
        "volumes: [{name: dshm, emptyDir: {medium: Memory}}]",
        "- {name: main, image: x, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}",
        None,
        "k8s-emptydir",
        True,
    ),
    # a container without a limit lifts the pod's: unknown again
    (
        "volumes: [{name: dshm, emptyDir: {medium: Memory}}]",
        (MOUNTED % "1Gi") + "\n- {name: side, image: y}",
        None,
        "k8s-emptydir",
        True,
    ),
    # pod-level resources (PodLevelResources) where given
    (
        "resources: {limits: {memory: 6Gi}}\nvolumes: [{name: dshm, emptyDir: {medium: Memory}}]",
        "- {name: main, image: x, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}",
        6 * GiB,
        "k8s-emptydir",
        False,
    ),
    ("volumes: [{name: dshm, emptyDir: {sizeLimit: 1Gi}}]", MOUNTED % "4Gi", GiB, "k8s-emptydir-disk", False),
    ("volumes: [{name: dshm, emptyDir: {}}]", MOUNTED % "4Gi", None, "k8s-emptydir-disk", True),
    ("volumes: [{name: dshm, hostPath: {path: /dev/shm, type: Directory}}]", MOUNTED % "4Gi", None, "host", True),
    ("hostIPC: true", "- {name: main, image: x}", None, "host-ipc", True),
    # other volumes at /dev/shm: what the container sees there, of a size the manifest does not tell
    ("volumes: [{name: dshm, hostPath: {path: /mnt/fast}}]", MOUNTED % "4Gi", None, "unknown", True),
    ("volumes: [{name: dshm, persistentVolumeClaim: {claimName: scratch}}]", MOUNTED % "4Gi", None, "unknown", True),
    # hostIPC with an emptyDir mounted at /dev/shm: the mount is what the container sees there
    (
        "hostIPC: true\nvolumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}]",
        MOUNTED % "4Gi",
        GiB,
        "k8s-emptydir",
        False,
    ),
]


@pytest.mark.parametrize("spec, containers, size, source, unknown", CASES)
def test_pod_shm(spec, containers, size, source, unknown):
    facts = pod(spec, containers)["Pod/p" + ("/main" if "side" in containers else "")].facts
    assert (facts.shm.size_bytes, facts.shm.source) == (size, source)
    assert facts.shm.free_bytes is None and facts.shm.used_bytes is None  # nothing runs: use is not known
    assert bool(facts.unreadable) == unknown == (size is None)
    assert all(u.startswith("the size of /dev/shm (") for u in facts.unreadable)
    assert facts.target.kind == "workload" and facts.runtime == "kubernetes"


@pytest.mark.parametrize("read_only", ["true", "false"])
@pytest.mark.parametrize(
    "volume", ["{medium: Memory, sizeLimit: 2Gi}", "{sizeLimit: 2Gi}", "null"], ids=["memory", "disk", "no-size"]
)
def test_a_read_only_mount_at_dev_shm_fails(volume, read_only):
    from shmdoctor.rules import judge

    facts = pod(
        f"volumes: [{{name: dshm, emptyDir: {volume}}}]",
        f"- {{name: main, image: x, volumeMounts: [{{name: dshm, mountPath: /dev/shm, readOnly: {read_only}}}]}}",
    )["Pod/p"].facts
    assert facts.shm.read_only is (read_only == "true")
    ids = [f.id for f in judge(facts, None).findings]
    assert ids[:1] == ["shm-read-only"] if read_only == "true" else "shm-read-only" not in ids


def test_host_ipc_and_container_memory_limit():
    facts = pod("hostIPC: true", "- {name: main, image: x, resources: {limits: {memory: 1500M}}}")["Pod/p"].facts
    assert facts.ipc.mode == "host" and facts.memory.limit_bytes == 1_500_000_000


def test_every_template_found_wherever_it_nests():
    found, passed_over = workloads((DATA / "k8s" / "training.yaml").read_text(), "training.yaml")
    assert sorted(found) == sorted(
        [
            "Deployment/feature-server",
            "Job/resnet50-train",
            "CronJob/nightly-eval",
            "StatefulSet/embedder/embed",
            "StatefulSet/embedder/metrics",
            "PyTorchJob/bert-ddp/Master",
            "PyTorchJob/bert-ddp/Worker",
            "Pod/debug-shell",
        ]
    )
    assert passed_over == ["ConfigMap/train-config", "Service/embedder"]
    size = {name: d.facts.shm.size_bytes for name, d in found.items()}
    assert size["Deployment/feature-server"] == 64 * MiB
    assert size["Job/resnet50-train"] == 2 * GiB
    assert size["CronJob/nightly-eval"] == 768 * MiB  # no sizeLimit: the pod's limits
    assert size["PyTorchJob/bert-ddp/Worker"] == 32 * GiB
    assert size["PyTorchJob/bert-ddp/Master"] is None  # no sizeLimit, no limits: the node's memory
    assert found["StatefulSet/embedder/embed"].facts.shm.source == "k8s-emptydir-disk"
    assert found["Pod/debug-shell"].facts.ipc.mode == "host"
    # the loader spec: the pod template's annotation, else the object's (PyTorchJob's, for both replica types)
    assert found["Job/resnet50-train"].loader_spec == "batch_size=100,num_workers=4,sample_bytes=1MiB"
    assert found["PyTorchJob/bert-ddp/Worker"].loader_spec.endswith("ranks=4")
    assert found["Deployment/feature-server"].loader_spec is None
    assert found["Job/resnet50-train"].facts.target.id == "ml/resnet50-train"


def test_kubectl_get_pods_list():
    text = (DATA / "kubectl-get-pods.json").read_text()
    found, passed_over = workloads(text, "pods.json")
    assert sorted(found) == ["Pod/coredns-5dd5756b68-7xk2p", "Pod/notebook-0", "Pod/resnet50-train-x7v4q"]
    assert passed_over == []
    train = found["Pod/resnet50-train-x7v4q"].facts
    assert (train.shm.size_bytes, train.memory.limit_bytes, train.target.id) == (
        512 * MiB,
        16 * GiB,
        "ml/resnet50-train-x7v4q",
    )
    assert found["Pod/coredns-5dd5756b68-7xk2p"].facts.target.id == "kube-system/coredns-5dd5756b68-7xk2p"
    # the same List read as YAML (stdin is sniffed) gives the same answer
    assert sorted(workloads(text, documents.STDIN)[0]) == sorted(found)


def test_typed_lists_and_jobset_style_template_lists():
    doc = {
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "js"},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "leader",
                            "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
                        },
                        {
                            "name": "workers",
                            "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
                        },
                    ]
                },
            }
        ],
    }
    found, _ = workloads(json.dumps(doc), "jobset.json")
    assert sorted(found) == ["JobSet/js/leader", "JobSet/js/workers"]


@pytest.mark.parametrize(
    "containers, volumes, message",
    [
        (
            "- {name: m, image: x, resources: {limits: {memory: 16 gigs}}}",
            "",
            "pod.yaml:6: Pod/p: resources.limits.memory",
        ),
        (
            "- {name: m, image: x, volumeMounts: [{name: gone, mountPath: /dev/shm}]}",
            "",
            "names volume 'gone', which the pod does not define",
        ),
        (
            "- {name: m, image: x, volumeMounts: [{name: d, mountPath: /dev/shm}]}",
            "volumes: [{name: d, emptyDir: {medium: Memory, sizeLimit: lots}}]",
            "emptyDir.sizeLimit: cannot read 'lots'",
        ),
    ],
)
def test_bad_values_name_file_and_line(containers, volumes, message):
    with pytest.raises(UsageError) as e:
        pod(volumes, containers)
    assert message in str(e.value)


REAL = DATA.parent / "real"  # public files as found (tests/data/real/README.md says where from)


@pytest.mark.parametrize(
    "source, expected",
    [
        (  # a serving runtime: its own containers, and the worker pod spec beside them
            "kserve-huggingfaceserver-multinode.yaml",
            {
                "ClusterServingRuntime/kserve-huggingfaceserver-multinode": 3 * GiB,
                "ClusterServingRuntime/kserve-huggingfaceserver-multinode/workerSpec": 3 * GiB,
            },
        ),
        (  # leader and worker templates, each with a 15Gi memory emptyDir
            "lws-vllm-gpu.yaml",
            {"LeaderWorkerSet/vllm/leaderTemplate": 15 * GiB, "LeaderWorkerSet/vllm/workerTemplate": 15 * GiB},
        ),
        (  # worker groups named by their groupName; KubeRay's /dev/shm, without memory to size it: unknown
            "kuberay-ray-cluster.heterogeneous.yaml",
            {
                "RayCluster/raycluster-heterogeneous/headGroupSpec": None,
                "RayCluster/raycluster-heterogeneous/small-group": None,
                "RayCluster/raycluster-heterogeneous/medium-group": None,
            },
        ),
        (
            "kubeflow-pytorchjob-simple.yaml",
            {"PyTorchJob/pytorch-simple/Master": 64 * MiB, "PyTorchJob/pytorch-simple/Worker": 64 * MiB},
        ),
    ],
)
def test_every_pod_of_a_real_custom_resource_with_its_own_names(source, expected):
    found, passed_over = workloads((REAL / source).read_text(), source)
    assert {name: d.facts.shm.size_bytes for name, d in found.items()} == expected
    assert passed_over == (["ConfigMap/ray-code"] if "kuberay" in source else [])


def test_an_api_list_gives_its_items_its_kind_and_a_generic_list_keeps_theirs():
    """A `<Kind>List` (the API server's, `kubectl get --raw`) does not repeat its kind in its items; a `List`
    (`kubectl get -o json`) holds objects of any kind, each saying its own."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "pytorch/pytorch"}]}}
    deployment = {"metadata": {"name": "d"}, "spec": {"template": {"spec": pod["spec"]}}}
    for body, names in [
        (
            {"apiVersion": "v1", "kind": "PodList", "items": [pod, pod | {"metadata": {"name": "q"}}]},
            ["Pod/p", "Pod/q"],
        ),
        ({"apiVersion": "apps/v1", "kind": "DeploymentList", "items": [deployment]}, ["Deployment/d"]),
        ({"apiVersion": "v1", "kind": "List", "items": [pod | {"kind": "Pod", "apiVersion": "v1"}]}, ["Pod/p"]),
    ]:
        found, skipped = kubernetes.probe(documents.Document("x.json", 0, body))
        assert [d.facts.target.name.split(":", 1)[1] for d in found] == names and skipped == []
    generic = {"apiVersion": "v1", "kind": "List", "items": [pod]}
    found, skipped = kubernetes.probe(documents.Document("x.json", 0, generic))
    assert found == [] and skipped == ["List item 1 (p): no kind (a List's items each say theirs)"]
