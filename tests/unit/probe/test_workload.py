"""Whether a definition looks like a training or inference job, and the default-shm warning only there."""

from __future__ import annotations

from pathlib import Path

import pytest

from shmdoctor.probe import documents, files, workload
from shmdoctor.rules import judge

REAL = Path(__file__).resolve().parents[2] / "data" / "real"


@pytest.mark.parametrize(
    "image, command, signs",
    [
        ("nvcr.io/nvidia/pytorch:24.01-py3", (), ("image nvcr.io/nvidia/pytorch:24.01-py3",)),
        ("vllm/vllm-openai:v0.8.5", (), ("image vllm/vllm-openai:v0.8.5",)),
        ("rayproject/ray:2.1.0", (), ("image rayproject/ray:2.1.0",)),
        ("registry.example.com/ml/trainer:2.13-cuda12", (), ("image registry.example.com/ml/trainer:2.13-cuda12",)),
        (
            "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",
            (),
            ("image docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727",),
        ),
        ("my/app:1", (["torchrun", "--nproc-per-node=8", "main.py"],), ("command torchrun",)),
        ("my/app:1", ("python -m torch.distributed.run x.py",), ("command torch.distributed.run",)),
        ("my/app:1", (["python3"], ["train_resnet.py", "--epochs=1"]), ("command train_resnet.py",)),
        ("my/app:1", ("python pretrain.py",), ("command pretrain.py",)),
        ("my/app:1", (["sh", "-c", "python3 -m vllm.entrypoints.openai.api_server"],), ("command vllm",)),
        ("postgres:16", (), ()),
        ("nginx:1.27", (["nginx", "-g", "daemon off;"],), ()),
        ("docker.io/valkey/valkey:9@sha256:5463", (), ()),
        ("ghcr.io/immich-app/immich-server:release", (), ()),
        ("my/app:1", (["python", "constraint.py", "--array"],), ()),  # 'train' and 'ray' inside other words
        (None, (None, 7), ()),
    ],
)
def test_ml_signs(image, command, signs):
    assert workload.ml_signs(image, *command) == signs


def _lint(text: str, source: str = "docker-compose.yml"):
    [doc] = documents.parse(text, source)
    from shmdoctor.probe import compose

    return {d.facts.target.name.split(":")[-1]: judge(d.facts, None) for d in compose.probe(doc, environ={})}


def test_without_a_loader_default_shm_only_where_it_looks_like_ml():
    reports = _lint(
        "services:\n"
        "  web: {image: nginx:1.27}\n"
        "  db: {image: postgres:16}\n"
        "  trainer: {image: my/app:1, command: [torchrun, --nproc-per-node=2, main.py]}\n"
        "  serve: {image: vllm/vllm-openai:v0.8.5}\n"
    )
    ids = {name: [f.id for f in r.findings] for name, r in reports.items()}
    assert ids == {"web": [], "db": [], "trainer": ["default-shm"], "serve": ["default-shm"]}
    assert "looks like a training or inference job (command torchrun)" in reports["trainer"].findings[0].message


def test_a_real_self_hosting_stack_gets_no_warning():
    inputs = files.read([str(REAL / "immich")])
    assert [d.facts.target.name.split(":")[-1] for d in inputs.definitions] == [
        "immich-server",
        "immich-machine-learning",
        "redis",
        "database",
    ]
    assert all(judge(d.facts, None).findings == () for d in inputs.definitions)
    assert inputs.definitions[3].facts.shm.size_bytes == 128 * 1024**2  # shm_size: 128mb


def test_real_ml_workloads_without_a_loader_are_warned():
    for source, names in {
        "kubeflow-pytorchjob-simple.yaml": ["Master", "Worker"],  # a pytorch image, 64 MiB
        "kuberay-ray-cluster.heterogeneous.yaml": ["headGroupSpec", "small-group", "medium-group"],  # ray
    }.items():
        inputs = files.read([str(REAL / source)])
        warned = [d.facts.target.name.split("/")[-1] for d in inputs.definitions if judge(d.facts, None).findings]
        assert warned == names, source


@pytest.mark.parametrize(
    "devices, env, runtime, gpus",
    [
        (["/dev/kfd", "/dev/dri"], None, None, "all"),  # ROCm's docker run --device=/dev/kfd --device=/dev/dri
        (["/dev/kfd:/dev/kfd:rwm"], None, None, "all"),
        (["-/dev/accel", "-/dev/dri", "-/dev/kfd"], None, None, "all"),  # Quadlet's optional devices (AddDevice=-)
        ([{"PathOnHost": "/dev/kfd", "PathInContainer": "/dev/kfd"}], None, None, "all"),  # docker inspect
        (["amd.com/gpu=0"], None, None, "0"),  # AMD's CDI name (Podman AddDevice=)
        ([], {"AMD_VISIBLE_DEVICES": "0,1"}, None, "0,1"),  # AMD's container toolkit
        ([], [{"name": "ROCR_VISIBLE_DEVICES", "value": "2"}], None, "2"),  # a pod's env
        ([], ["HIP_VISIBLE_DEVICES=all"], None, "all"),
        ([], None, "amd", "all"),  # compose runtime: amd
        (["/dev/dri", "/dev/fuse"], {"AMD_VISIBLE_DEVICES": "none"}, "runc", None),  # no compute device: no GPU
    ],
)
def test_amd_gpus_count_as_gpus(devices, env, runtime, gpus):
    assert workload.amd_gpus(devices, env, runtime) == gpus


def test_amd_gpus_in_compose_and_kubernetes_make_it_an_ml_job():
    text = (
        "services:\n  rocm:\n    image: rocm/dev-ubuntu-22.04\n    devices: [/dev/kfd, /dev/dri]\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, image: my/app, resources: {limits: {amd.com/gpu: 2}}}]}\n"
    )
    found = []
    for doc in documents.parse(text, "x.yaml"):
        inputs = files.Inputs()
        files._definitions(doc, None, files._Environments(None), inputs)
        found += inputs.definitions
    assert [d.facts.gpus for d in found] == ["all", "2"]
    for d in found:  # 64 MiB and GPUs: the default-shm warning, as for NVIDIA's
        assert [f.id for f in judge(d.facts, None).findings] == ["default-shm"]


def test_rocm_render_nodes_are_counted_where_there_is_kfd(tmp_path):
    from shmdoctor.probe.local import gpu_count

    (tmp_path / "dri").mkdir()
    for name in ("kfd", "dri/renderD128", "dri/renderD129", "dri/card0"):
        (tmp_path / name).write_text("")
    assert gpu_count({}, str(tmp_path)) == 2
    assert gpu_count({"ROCR_VISIBLE_DEVICES": "0"}, str(tmp_path)) == 1


@pytest.mark.parametrize(
    "image, command",
    [
        ("mpioperator/tensorflow-benchmarks:latest", ["mpirun", "-np", "2", "python", "tf_cnn_benchmarks.py"]),
        ("horovod/horovod", ["/usr/local/bin/mpiexec", "python", "train.py"]),  # MPIJob launchers: ranks run elsewhere
        ("ollama/ollama", ["/bin/sh", "-c", "ollama pull llama3"]),  # one-shot fetches
        ("ollama/ollama:rocm", "pull llama3"),  # the image's own entrypoint is ollama
        ("pytorch/pytorch", ["bash", "-lc", "hf download meta-llama/Llama-3.1-8B"]),
        ("winglian/axolotl:main-py3.10-cu118-2.0.1", "huggingface-cli login --token ${HF_TOKEN}"),  # SkyPilot's axolotl
        # log viewers: kohya_ss's compose gives its tensorboard service the GPUs as well
        ("tensorflow/tensorflow:latest-gpu", "tensorboard --logdir=/app/logs --bind_all"),
        ("pytorch/pytorch", ["python3", "-m", "tensorboard.main", "--logdir", "/runs"]),
    ],
)
def test_launchers_and_one_shot_fetches_load_nothing(image, command):
    assert workload.ml_signs(image, command) == ()
    assert workload.idle(image, command) == {"loads-nothing"}  # whatever GPUs it reserves: no training job


def test_a_job_that_loads_is_not_idle():
    assert workload.idle("pytorch/pytorch", ["torchrun", "train.py"]) == frozenset()
    assert workload.idle("ollama/ollama", "serve") == frozenset()
    assert workload.idle("python:3.11", ["python", "log_tensorboard_metrics.py"]) == frozenset()


@pytest.mark.parametrize(
    "image, command",
    [
        ("ollama/ollama", ["bash", "-c", "ollama serve & sleep 3; ollama pull llama3"]),  # serves after pulling
        ("ollama/ollama", "serve"),
        ("horovod/horovod", ["horovodrun", "-np", "4", "python", "train.py"]),  # runs its ranks here
    ],
)
def test_servers_and_local_launchers_still_look_like_ml(image, command):
    assert workload.ml_signs(image, command)
