"""ECS task and Batch job definitions -> Facts: sharedMemorySize in MiB, Fargate's fixed /dev/shm."""

from __future__ import annotations

import json

import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import documents, ecs, files
from shmdoctor.probe.unknown import Unknown
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


def probed(body: dict) -> dict:
    """Facts per container of a definition given as parsed (values a JSON file cannot hold: an Unknown, a digit
    string of any length)."""
    return {d.facts.target.name.split(":", 1)[1]: d.facts for d in ecs.probe(documents.Document("t.json", 0, body))}


def test_a_size_is_read_up_to_64_digits_and_1_pib():
    """limits.py: at most MAX_DIGITS (64) digits of one number, at most 1 PiB (2**30 MiB) of any size."""
    params = lambda size: task({"linuxParameters": {"sharedMemorySize": size}})  # noqa: E731
    assert probed(params("0" * 63 + "1"))["train/c"].shm.size_bytes == MiB
    with pytest.raises(UsageError, match="must be a whole number of MiB"):
        probed(params("0" * 64 + "1"))
    assert probed(params(str(2**30)))["train/c"].shm.size_bytes == 2**50
    with pytest.raises(UsageError, match=f"of {2**30 + 1} MiB is more memory than any machine has"):
        probed(params(str(2**30 + 1)))


def definitions(count: int, per: int, kind: str) -> dict:
    """A task definition of count x per containers, or `count` Batch multi-node jobs of `per` node ranges (each job
    counts its ranges and its own containerProperties)."""
    if kind == "task":
        return {"family": "t", "containerDefinitions": [{"name": f"c{i}", "image": "x"} for i in range(count * per)]}
    job = lambda n: {  # noqa: E731
        "jobDefinitionName": f"j{n}",
        "containerProperties": {"image": "x"},
        "nodeProperties": {"nodeRangeProperties": [{"targetNodes": f"{r}:", "container": {"image": "x"}}
                                                   for r in range(per)]},
    }  # fmt: skip
    return {"jobDefinitions": [job(n) for n in range(count)]}


def test_a_file_holds_at_most_1000_containers_every_definition_and_node_range_together():
    assert len(list(ecs.placed(definitions(1000, 1, "task")))) == 1000
    with pytest.raises(UsageError, match="more than 1000 containers in one file"):
        list(ecs.placed(definitions(1001, 1, "task")))
    # a job of 3 node ranges counts 4: 250 of them are 1000, 251 are 1004
    assert len(list(ecs.placed(definitions(250, 3, "job")))) == 1000
    with pytest.raises(UsageError, match="more than 1000 containers"):
        list(ecs.placed(definitions(251, 3, "job")))


@pytest.mark.parametrize(
    "body",
    [
        {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}},
        {"services": {"t": {"image": "x"}}},
        {"jobDefinitions": [{"jobDefinitionName": "j", "type": "container"}]},  # neither container nor nodes
    ],
)
def test_what_has_no_container_of_ecs_or_batch_is_no_definition(body):
    assert not ecs.is_task_definition(body)


def test_each_resource_requirement_is_read_by_its_own_type():
    found = probed(task({"resourceRequirements": [{"type": "GPU", "value": 4}, {"type": "MEMORY", "value": "2048"}]}))
    assert (found["train/c"].gpus, found["train/c"].memory.limit_bytes) == ("4", 2 * GiB)


def test_ipc_none_has_no_dev_shm_and_ipc_task_the_pause_containers():
    none = probed(task({}, ipcMode="none"))["train/c"]
    assert (none.shm.present, none.shm.source) == (False, "none")
    shared = containers(task({"linuxParameters": {"sharedMemorySize": 2048}}, ipcMode="task"))["train/c"]  # as read
    assert (shared.shm.size_bytes, shared.ipc.mode, shared.ipc.owner) == (
        None,
        "container",
        "the task's pause container",
    )
    assert shared.unreadable and "the task's pause container" in shared.unreadable[0]


def test_a_size_set_when_deployed_is_unknown_on_ec2_and_fargates_64_mib_on_fargate():
    size = Unknown("{Ref: ShmSize}")
    ec2 = probed(task({"linuxParameters": {"sharedMemorySize": size}}))["train/c"]
    assert (ec2.shm.size_bytes, ec2.shm.source) == (None, "docker-shm")
    assert ec2.unreadable == ("the size of /dev/shm (linuxParameters.sharedMemorySize is {Ref: ShmSize}, set when "
                              "deployed)",)  # fmt: skip
    fargate = probed(task({"linuxParameters": {"sharedMemorySize": size}}, requiresCompatibilities=["FARGATE"]))
    assert (fargate["train/c"].shm.size_bytes, fargate["train/c"].unreadable) == (64 * MiB, ())


def test_the_size_asked_is_said_in_mib_as_written_on_ec2_and_on_fargate():
    ec2 = probed(task({"linuxParameters": {"sharedMemorySize": 2048}}))["train/c"]
    assert ec2.shm.detail == "linuxParameters.sharedMemorySize: 2048" and not ec2.flags & {"shm-fixed"}
    fargate = probed(task({"linuxParameters": {"sharedMemorySize": 2048}}, requiresCompatibilities=["FARGATE"]))
    facts = fargate["train/c"]
    assert facts.shm.detail == "Fargate does not support linuxParameters.sharedMemorySize (2048)"
    assert {"shm-fixed", "shm-size-ignored"} <= facts.flags
    plain = probed(task({}, requiresCompatibilities=["FARGATE"]))["train/c"]
    assert "shm-fixed" in plain.flags and "shm-size-ignored" not in plain.flags


def test_a_container_that_loads_nothing_keeps_its_flag_beside_fargates():
    body = task({"command": ["mpirun", "-np", "16", "python", "train.py"]}, requiresCompatibilities=["FARGATE"])
    body["containerDefinitions"].insert(0, "not a container")  # passed over, and the next one read
    flags = probed(body)["train/c"].flags
    assert "shm-fixed" in flags and "loads-nothing" in flags


def test_a_multinode_job_without_container_properties_is_its_node_ranges():
    ranges = [{"targetNodes": "0", "container": {"image": "x"}}, {"targetNodes": "1:", "container": {"image": "y"}}]
    job = {"jobDefinitionName": "mnp", "nodeProperties": {"numNodes": 4, "nodeRangeProperties": ranges}}
    assert sorted(probed({"jobDefinitions": [job]})) == ["mnp/0", "mnp/1:"]


def test_a_batch_job_is_batchs_and_its_name_says_where_a_bad_value_is():
    jobs = {"jobDefinitions": [{"jobDefinitionName": "resnet", "containerProperties": {"image": "x"}}]}
    assert probed(jobs)["resnet"].runtime == "batch"
    jobs["jobDefinitions"][0]["platformCapabilities"] = "FARGATE"
    with pytest.raises(UsageError, match="t.json: resnet: platformCapabilities must be a list"):
        probed(jobs)
    with pytest.raises(UsageError, match="t.json: train: requiresCompatibilities must be a list"):
        probed(task({}, requiresCompatibilities="EC2"))
