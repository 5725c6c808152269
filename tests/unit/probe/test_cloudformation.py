"""CloudFormation templates (YAML with !Ref/!Sub/!If tags, JSON with Ref/Fn::) -> Facts: ECS task and Batch job
definitions, single and multinode, read as the definitions CloudFormation registers; intrinsics are unknown; --fix
shows the change in the template's words and writes nothing."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from shmdoctor.probe import cloudformation, documents
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, forked_cli, validate

REAL = DATA / "real" / "cloudformation"
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB


def lint_json(*args: str) -> tuple[int, dict]:
    proc = forked_cli("lint", *args, "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, validate(json.loads(proc.stdout))


def by_name(doc: dict) -> dict:
    return {r["target"]["name"].split(":", 1)[1]: r for r in doc["reports"]}


def test_yaml_with_tags_batch_single_and_multinode_and_an_ecs_task():
    code, doc = lint_json(str(DATA / "iac" / "cloudformation-batch.yaml"))
    reports = by_name(doc)
    assert set(reports) == {"TrainJob", "Multi/0:", "Task/web"}  # the S3 bucket is passed over
    train = reports["TrainJob"]
    assert (train["shm"]["size_bytes"], train["gpus"], train["memory"]["limit_bytes"]) == (8 * GiB, "1", None)
    assert (reports["Multi/0:"]["verdict"], reports["Multi/0:"]["gpus"]) == ("warn", "8")  # 64 MiB and 8 GPUs
    web = reports["Task/web"]  # IpcMode: !If [...]: unknown, said
    assert web["ipc"]["mode"] == "unknown" and "!If [IsHost, host, AWS::NoValue]" in web["findings"][0]["message"]


def test_json_template_with_intrinsic_functions():
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Resources": {
            "Train": {
                "Type": "AWS::ECS::TaskDefinition",
                "Properties": {
                    "RequiresCompatibilities": ["EC2"],
                    "ContainerDefinitions": [
                        {
                            "Name": "trainer",
                            "Image": {"Fn::Sub": "${AWS::AccountId}.dkr.ecr/train:latest"},
                            "LinuxParameters": {"SharedMemorySize": {"Ref": "ShmMiB"}},
                            "Memory": 4096,
                        },
                        {
                            "Name": "sidecar",
                            "Image": "nginx",
                            "LinuxParameters": {"Tmpfs": [{"ContainerPath": "/dev/shm", "Size": 512}]},
                        },
                    ],
                },
            }
        },
    }
    [doc] = documents.parse(json.dumps(template), "stack.json")
    found, passed_over = cloudformation.probe(doc)
    facts = {d.facts.target.name: d.facts for d in found}
    trainer = facts["stack.json:Train/trainer"]
    assert trainer.shm.size_bytes is None and "sharedMemorySize is Ref: ShmMiB" in trainer.unreadable[0]
    assert trainer.memory.limit_bytes == 4 * GiB and trainer.form == "cloudformation"
    assert facts["stack.json:Train/sidecar"].shm.size_bytes == 512 * MiB


def test_a_template_without_containers_is_passed_over_not_told_to_use_envsubst(tmp_path):
    path = tmp_path / "bucket.yaml"
    path.write_text(
        'AWSTemplateFormatVersion: "2010-09-09"\nResources:\n  B:\n    Type: AWS::S3::Bucket\n'
        "    Properties:\n      BucketName: !Sub '${AWS::StackName}-data'\n"
    )
    proc = forked_cli("lint", str(path))
    assert proc.returncode == 2  # nothing to judge in the only input
    assert "a CloudFormation template without AWS::ECS::TaskDefinition or AWS::Batch::JobDefinition" in proc.stderr
    assert "envsubst" not in proc.stderr


@pytest.mark.parametrize(
    "file, names",
    [
        # AlphaFold's Batch jobs: 16000 MiB, a GPU, no SharedMemorySize: the default 64 MiB; the folding job's
        # command is nvidia-smi (the real one is given at submit time), so nothing says it loads batches
        (
            "alphafold-cfn-batch.yaml",
            {"CPUFoldingJobDefinition", "GPUFoldingJobDefinition", "CPUDownloadJobDefinition"},
        ),
        ("nextflow-resources.template.yaml", {"BatchNextflowJobDefinition"}),
        ("ecs-refarch-product-service.yaml", {"TaskDefinition/product-service"}),
        ("ecs-refarch-website-service.yaml", {"TaskDefinition/website-service"}),
    ],
)
def test_real_templates(file, names):
    code, doc = lint_json(str(REAL / file))
    reports = by_name(doc)
    assert set(reports) == names and code == 0
    assert {r["shm"]["size_bytes"] for r in reports.values()} == {64 * MiB}
    assert {r["verdict"] for r in reports.values()} == {"ok"}


def test_fix_is_shown_in_the_templates_words_and_not_written(tmp_path):
    path = tmp_path / "stack.yaml"
    shutil.copy(DATA / "iac" / "cloudformation-batch.yaml", path)
    before = path.read_text()
    proc = forked_cli("lint", str(path), *SEED, "--fix")
    assert path.read_text() == before and proc.returncode == 1
    assert "Multi/0:: not written (a CloudFormation template is not rewritten" in proc.stderr
    assert re.search(r"change it by hand: LinuxParameters: \{SharedMemorySize: \d+\}$", proc.stderr, re.M)
    assert "IpcMode" not in proc.stderr  # a Batch job has no IPC mode
