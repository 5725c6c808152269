"""--fix beside a target whose pod another object makes: a KServe model's (its ServingRuntime's) and a Kubeflow
TrainJob's (its runtime's) are said, never written; a Pod in the same file is written as ever. The expected file is
the Pod given the dshm volume Kubernetes' docs give (emptyDir, medium Memory, mounted at /dev/shm), by hand."""

from __future__ import annotations

from shmdoctor.cli import main
from tests.helpers import DATA

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin
POD = (
    "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: train\n"
    "spec:\n  containers:\n    - name: t\n      image: pytorch/pytorch\n"
)
POD_FIXED = POD + (
    "      volumeMounts:\n        - name: dshm\n          mountPath: /dev/shm\n"
    "  volumes:\n    - name: dshm\n      emptyDir:\n        medium: Memory\n        sizeLimit: 1536Mi\n"
)


def test_a_kserve_models_pod_is_said_and_a_pod_beside_it_written(tmp_path, capsys):
    isvc = (DATA / "kserve" / "llama-isvc.yaml").read_text().replace("memory: 48Gi", "memory: 1Gi")
    path = tmp_path / "isvc.yaml"
    path.write_text(isvc + POD)
    runtime = str(DATA / "real" / "kserve-vllmserver.yaml")
    assert main(["lint", str(path), runtime, "--fix", "--workload", "*", *LOADER]) == 1
    assert path.read_text() == isvc + POD_FIXED
    err = capsys.readouterr().err
    assert f"{path}:InferenceService/llama: not written: a model's pod is its ServingRuntime's" in err
    assert f"fixed {path}:Pod/train: volume dshm" in err


def test_a_trainjobs_pod_is_said_and_a_pod_beside_it_written(tmp_path, capsys):
    job = (
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: tune}\nspec:\n"
        "  runtimeRef: {name: torch-distributed}\n  trainer:\n    image: my/trainer:1\n"
        "    command: [torchrun, train.py]\n    resourcesPerNode: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}\n"
    )
    path = tmp_path / "job.yaml"
    path.write_text(job + POD)
    assert main(["lint", str(path), "--fix", "--workload", "*", *LOADER]) == 1
    assert path.read_text() == job + POD_FIXED
    err = capsys.readouterr().err
    assert f"{path}:TrainJob/tune/node: not written: a TrainJob's pod is its runtime's" in err
    assert f"fixed {path}:Pod/train: volume dshm" in err


def test_a_fix_with_no_size_to_write_is_said_once_in_its_own_words(tmp_path, capsys):
    """Fargate cannot size /dev/shm (AWS Batch's docs): the fix is a move to EC2, said as its summary, not twice."""
    path = tmp_path / "fargate.json"
    path.write_text(
        '{"jobDefinitionName": "t", "type": "container", "platformCapabilities": ["FARGATE"],\n'
        '"containerProperties": {"image": "pytorch/pytorch", "command": ["torchrun", "train.py"]}}\n'
    )
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"shmdoctor lint --fix: {path}:t: no size to write: Fargate cannot size /dev/shm: run the job on EC2 compute"
        " (platformCapabilities: EC2) with linuxParameters.sharedMemorySize of 1.5 GiB (900 MiB needed + 25%)\n"
    )


def test_a_nomad_job_is_shown_its_fix_in_bytes_and_never_written(tmp_path, capsys):
    """tests/data/iac/train.nomad at 64 MiB: Nomad's docker driver takes shm_size in bytes, 1.5 GiB = 1610612736."""
    text = (DATA / "iac" / "train.nomad").read_text().replace("shm_size = 2147483648", "shm_size = 67108864")
    path = tmp_path / "train.nomad"
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert path.read_text() == text
    assert capsys.readouterr().err == (
        f"shmdoctor lint --fix: {path}:train/gpu/trainer: not written (a Nomad job's HCL is not rewritten: its"
        " variables and templates would not survive it): change it by hand: shm_size = 1610612736\n"
    )
