"""Kubeflow Pipelines v2 compiled pipelines -> each executor judged as the pod KFP's driver makes: emptyDirMounts
(kubernetes.empty_dir_mount) at /dev/shm, resources old and new, pipeline parameters' defaults, enabledSharedMemory
said as not applied; --fix shows the pipeline's Python and writes nothing."""

from __future__ import annotations

import json
import shutil

from shmdoctor.errors import UsageError
from shmdoctor.fleet import lint
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, forked_cli, validate

PIPELINE = DATA / "kfp" / "train-pipeline.yaml"
REAL = DATA / "real" / "kfp"
SEED = ["--batch-size", "64", "--num-workers", "8", "--sample-bytes", "2MiB"]  # 2.12 GiB


def _reports(path):
    doc = lint((str(path),), swarm=None)
    return {r.facts.target.name.split(":", 1)[1]: r for r in doc.reports}


def test_each_executor_as_the_pod_the_driver_makes():
    reports = _reports(PIPELINE)
    assert sorted(reports) == ["exec-train", "exec-train-2", "exec-train-3"]  # the importer runs no container
    train = reports["exec-train"].facts
    assert (train.shm.size_bytes, train.shm.source, train.memory.limit_bytes, train.gpus) == (
        GiB,
        "k8s-emptydir",
        16 * GiB,
        "1",
    )
    assert train.target.line == 24 and train.form == "kfp" and train.ml_signs
    disk = reports["exec-train-2"].facts  # an emptyDirMount without medium: the node's disk
    assert (disk.shm.source, disk.memory.limit_bytes) == ("k8s-emptydir-disk", 17_179_869_184)  # memoryLimit as %vG
    assert {f.id for f in reports["exec-train-2"].findings} >= {"shm-on-disk"}


def test_enabled_shared_memory_is_said_not_applied_and_a_parameter_is_its_default():
    report = _reports(PIPELINE)["exec-train-3"]
    assert (report.facts.shm.size_bytes, report.facts.shm.source, report.facts.gpus) == (64 * MiB, "runtime-shm", "2")
    assert any(n.startswith("enabledSharedMemory is not applied by KFP's backend") for n in report.notes)
    assert any("the pipeline's default for gpus: 2" in n for n in report.notes)


def test_real_pipelines_of_kfp_itself():
    mounted = _reports(REAL / "empty_dir_mounts.yaml")["exec-comp"]  # a memory emptyDir at /mnt/my_vol_1
    assert (mounted.verdict, mounted.facts.shm.size_bytes, mounted.facts.gpus) == ("ok", 64 * MiB, None)
    machine = _reports(REAL / "pipeline_with_string_machine_fields_pipeline_input.yaml")["exec-sum-numbers"]
    assert (machine.facts.memory.limit_bytes, machine.facts.gpus) == (15 * 10**9, "1")  # the defaults, said
    assert sum("a run may set another" in n for n in machine.notes) == 3
    gpu = _reports(REAL / "nvidia_gpu_scheduling_check.yaml")["exec-verify-gpu-scheduled"]  # nvidia.com/gpu: 1
    assert (gpu.verdict, [f.id for f in gpu.findings], gpu.facts.gpus) == ("warn", ["default-shm"], "1")


def test_fix_is_the_pipelines_python_and_nothing_is_written(tmp_path):
    path = tmp_path / "pipeline.yaml"
    shutil.copy(PIPELINE, path)
    before = path.read_text()
    proc = forked_cli("lint", str(path), *SEED, "--fix")
    assert proc.returncode == 1 and path.read_text() == before
    assert "not written (a compiled Kubeflow pipeline is not rewritten" in proc.stderr
    proc = forked_cli("lint", str(path), *SEED, "--format", "json")
    reports = {r["target"]["name"].split(":", 1)[1]: r for r in validate(json.loads(proc.stdout))["reports"]}
    fix = reports["exec-train-3"]["findings"][0]["fixes"][0]
    assert fix["form"] == "kfp" and fix["text"].startswith(
        'kubernetes.empty_dir_mount(task, volume_name="dshm", mount_path="/dev/shm", medium="Memory", size_limit="3Gi")'
        "  # from kfp import kubernetes"
    )
    assert "sizeLimit: 3Gi}] under platforms.kubernetes.deploymentSpec.executors" in fix["text"]
    assert "the call that mounts it, changed" in reports["exec-train"]["findings"][0]["fixes"][0]["text"]


def test_a_pipeline_job_json_and_a_bad_quantity(tmp_path):
    import yaml

    spec, platform = list(yaml.safe_load_all(PIPELINE.read_text()))
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"displayName": "x", "pipelineSpec": spec, "platformSpec": platform}))
    assert _reports(job)["exec-train"].facts.shm.size_bytes == GiB
    platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]["exec-train"]["emptyDirMounts"][0][
        "sizeLimit"
    ] = "lots"
    job.write_text(json.dumps({"pipelineSpec": spec, "platformSpec": platform}))
    try:
        _reports(job)
    except UsageError as e:
        assert "exec-train" in str(e) and "sizeLimit" in str(e)
    else:
        raise AssertionError("a sizeLimit that is no quantity was judged")
