"""A Kubeflow TrainJob is judged as the pod its runtime makes for the trainer: the runtime of the same run, else
the one Kubeflow ships of that name (said as assumed), with the job's trainer image, command and resources and its
runtimePatches' volumes; one whose runtime is neither is passed over, saying so."""

from __future__ import annotations

import json

from shmdoctor.cli import main
from shmdoctor.probe import trainjob
from tests.helpers import DATA

REAL = DATA / "real"
JOB = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: tune}
spec:
  runtimeRef: {name: RUNTIME}
  trainer:
    image: my/trainer:1
    command: [torchrun, train.py]
    resourcesPerNode: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}
"""
PATCH = """  runtimePatches:
    - manager: me
      trainingRuntimeSpec:
        template:
          spec:
            replicatedJobs:
              - name: node
                template:
                  spec:
                    template:
                      spec:
                        volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}]
                        containers: [{name: node, volumeMounts: [{name: dshm, mountPath: /dev/shm}]}]
"""


def lint(capsys, *paths) -> dict:
    code = main(["lint", *map(str, paths), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    doc["code"] = code
    return doc


def test_a_trainjob_on_a_shipped_runtime_is_its_trainer_pod_said_as_assumed(tmp_path, capsys):
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("RUNTIME", "torch-distributed"))
    [report] = lint(capsys, path)["reports"]
    assert report["target"]["name"] == f"{path}:TrainJob/tune/node" and report["target"]["line"] == 1
    assert (report["shm"]["size_bytes"], report["gpus"], report["verdict"]) == (64 << 20, "4", "warn")
    assert any(
        n.startswith("assumed ClusterTrainingRuntime/torch-distributed as Kubeflow ships it") for n in report["notes"]
    )


def test_its_runtime_patch_mounting_dshm_is_read(tmp_path, capsys):
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("RUNTIME", "torch-distributed") + PATCH)
    [report] = lint(capsys, path)["reports"]
    assert (report["shm"]["size_bytes"], report["verdict"]) == (8 << 30, "ok")


def test_the_runtime_of_the_same_run_comes_first(capsys):
    doc = lint(capsys, REAL / "trainer-trainjob-multi-node.yaml", REAL / "trainer-deepspeed-distributed.yaml")
    job = next(r for r in doc["reports"] if ":TrainJob/" in r["target"]["name"])
    assert "assumed ClusterTrainingRuntime/torch-distributed" in " ".join(job["notes"])  # not in this run
    runtime = (REAL / "trainer-torch-distributed.yaml").read_text().replace("pytorch/pytorch", "my/own-pytorch")
    [doc_of] = [
        trainjob.resolve(d, {("ClusterTrainingRuntime", "torch-distributed"): _yaml(runtime)})[0]
        for d in _docs(JOB.replace("RUNTIME", "torch-distributed").replace("    image: my/trainer:1\n", ""))
    ]
    assert doc_of is not None and doc_of.body["spec"]["containers"][0]["image"].startswith("my/own-pytorch")


def test_a_runtime_neither_in_the_run_nor_shipped_is_said(tmp_path, capsys):
    path = tmp_path / "job.yaml"
    path.write_text(JOB.replace("RUNTIME", "my-runtime"))
    assert main(["lint", str(path)]) == 2
    assert "its runtime ClusterTrainingRuntime/my-runtime is neither in this run nor one Kubeflow ships" in (
        capsys.readouterr().err
    )


def _yaml(text: str) -> dict:
    import yaml

    return yaml.safe_load(text)


def _docs(text: str):
    from shmdoctor.probe import documents

    return documents.parse(text, "job.yaml")
