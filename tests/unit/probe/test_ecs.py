"""ECS task and Batch job definitions -> Facts: sharedMemorySize in MiB, Fargate's fixed /dev/shm."""

from __future__ import annotations

import json

import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import documents, ecs, files
from shmdoctor.rules import judge
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA

SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB


def containers(body: dict) -> dict:
    [doc] = documents.parse(json.dumps(body), "task.json")
    return {d.facts.target.name.split(":", 1)[1]: d.facts for d in ecs.probe(doc)}


def task(container: dict, **task_keys) -> dict:
    return {"family": "train", "containerDefinitions": [{"name": "c", "image": "x", **container}], **task_keys}


@pytest.mark.parametrize(
    "container, task_keys, size, source, ipc",
    [
        ({}, {}, 64 * MiB, "docker-shm", "private"),
        ({"linuxParameters": {"sharedMemorySize": 2048}}, {}, 2 * GiB, "docker-shm", "private"),
        ({"linuxParameters": {"tmpfs": [{"containerPath": "/dev/shm", "size": 512}]}}, {}, 512 * MiB, "tmpfs",
         "private"),
        ({"linuxParameters": {"sharedMemorySize": 2048}}, {"ipcMode": "host"}, None, "host-ipc", "host"),
        ({}, {"ipcMode": "none"}, None, "none", "none"),
        # Fargate: the runtime's 64 MiB whatever sharedMemorySize says
        ({"linuxParameters": {"sharedMemorySize": 2048}}, {"requiresCompatibilities": ["FARGATE"]}, 64 * MiB,
         "runtime-shm", "private"),
    ],
)  # fmt: skip
def test_container_shm(container, task_keys, size, source, ipc):
    facts = containers(task(container, **task_keys))["train/c"]
    assert (facts.shm.size_bytes, facts.shm.source, facts.ipc.mode, facts.runtime) == (size, source, ipc, "ecs")


def test_describe_task_definition_output_and_memory_in_mib():
    facts = containers({"taskDefinition": task({"memory": 30720}, memory="61440")})["train/c"]
    assert facts.memory.limit_bytes == 30 * GiB  # the container's hard limit over the task's
    facts = containers(task({}, memory="61440"))["train/c"]
    assert facts.memory.limit_bytes == 60 * GiB


def test_the_real_fargate_file_says_its_shared_memory_size_is_ignored():
    inputs = files.read([str(DATA / "real" / "ecs-fargate-remote-browser.json")])
    [found] = inputs.definitions
    report = judge(found.facts, None)
    [finding] = report.findings
    assert finding.id == "platform-ignores-shm-size" and "Fargate does not support" in finding.message
    assert "run the task on EC2 capacity" in finding.fixes[0].summary


def test_batch_job_definitions_fixes_in_their_own_language(capsys):
    path = str(DATA / "platforms" / "batch-job-definitions.json")
    assert main(["lint", path, *SEED, "--workload", "*"]) == 1  # the python job too: no ML image of its own
    out = capsys.readouterr().out
    assert '"linuxParameters": {"sharedMemorySize": 1536}' in out and "docker run" not in out
    assert "Fargate cannot size /dev/shm" in out and "DataLoader(batch_size=5, ...)" in out
    inputs = files.read([path])
    train = next(d.facts for d in inputs.definitions if d.facts.target.name.endswith(":resnet-train"))
    assert (train.shm.size_bytes, train.memory.limit_bytes, train.gpus) == (512 * MiB, 60 * GiB, "4")
    assert train.ml_signs == (
        "image 123456789012.dkr.ecr.us-east-1.amazonaws.com/trainer:2.13-cuda12",
        "command torchrun",
    )


@pytest.mark.parametrize(
    "container, message",
    [
        ({"linuxParameters": {"sharedMemorySize": "lots"}}, "linuxParameters.sharedMemorySize must be a whole number"),
        ({"linuxParameters": ["x"]}, "linuxParameters must be an object, not list"),
        ({"memory": 1.5}, "memory must be a whole number of MiB"),
    ],
)
def test_bad_values_are_one_line(container, message):
    with pytest.raises(UsageError, match=message):
        containers(task(container))
