"""--fix of an ECS task definition whose task has a memory of its own: ECS refuses a container's memory above the
task's (RegisterTaskDefinition), so a task memory below the container's new one is raised to it, in the type the
file gives it (the console writes a string); one already above is left. Expected files written out by hand."""

from __future__ import annotations

import pytest

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin
TASK = '{\n  "family": "t",\n  "memory": TASK,\n  "containerDefinitions": [\n    {\n      "name": "c",\n'
TASK += '      "image": "pytorch/pytorch",\n      "memory": 1024\n    }\n  ]\n}\n'
ADDED = '      "linuxParameters": {\n        "sharedMemorySize": 1536\n      },\n'


@pytest.mark.parametrize(
    "task, after",
    [('"1024"', '"1536"'), ("1024", "1536"), ('"1535"', '"1536"'), ('"1536"', '"1536"'), ('"4096"', '"4096"')],
)
def test_the_task_memory_is_raised_to_the_containers_never_lowered(tmp_path, task, after):
    path = tmp_path / "task.json"
    path.write_text(TASK.replace("TASK", task))
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    expected = TASK.replace("TASK", after).replace('"memory": 1024\n', '"memory": 1536\n')
    assert path.read_text() == expected.replace('    {\n      "name"', "    {\n" + ADDED + '      "name"')


@pytest.mark.parametrize(
    "memory, after",
    [
        (  # Batch's own way: a MEMORY resource requirement, its value a string of MiB
            '"resourceRequirements": [{"type": "VCPU", "value": "4"}, {"type": "MEMORY", "value": "1024"}]',
            '"resourceRequirements": [{"type": "VCPU", "value": "4"}, {"type": "MEMORY", "value": "1536"}]',
        ),
        ('"memory": 1024', '"memory": 1536'),  # the deprecated key, where the file has it
    ],
)
def test_a_batch_job_definitions_memory_is_set_where_it_has_it(tmp_path, memory, after):
    job = '{\n  "jobDefinitionName": "t",\n  "type": "container",\n  "containerProperties": {\n'
    job += '    "image": "pytorch/pytorch",\n    MEMORY\n  }\n}\n'
    path = tmp_path / "job.json"
    path.write_text(job.replace("MEMORY", memory))
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    added = '    "linuxParameters": {\n      "sharedMemorySize": 1536\n    },\n'
    expected = job.replace("MEMORY", after).replace(
        '  "containerProperties": {\n', '  "containerProperties": {\n' + added
    )
    assert path.read_text() == expected


def test_a_container_without_memory_under_a_tasks_gets_its_own_key(tmp_path):
    """The task's 1024 MiB is the container's limit: the container gets a memory key of its own (never Batch's
    resourceRequirements, which a task's container does not take for memory), and the task is raised with it."""
    text = '{\n  "family": "t",\n  "memory": "1024",\n  "containerDefinitions": [\n    {\n      "name": "c",\n'
    text += '      "image": "pytorch/pytorch"\n    }\n  ]\n}\n'
    path = tmp_path / "task.json"
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    added = '      "memory": 1536,\n' + ADDED
    expected = text.replace('"memory": "1024"', '"memory": "1536"').replace("    {\n", "    {\n" + added)
    assert path.read_text() == expected
