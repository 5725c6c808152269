"""README.md's four ways in, run for real in default containers: what explain, check, audit and examples/train.py print
there is what README.md shows (and docs/preflight.md, train.py's), line for line (a container's hostname, its memory in
use, ulimit and CPUs aside); and docs/consumers.md's check of eight ranks without P2P, and of Ray's store."""

import re
import shlex
import subprocess

import pytest

from tests.helpers import doc_blocks, docker_run, missing, run_cli, unique_name

BLOCKS = [b for b in doc_blocks() if b.marker == "tested: tests/integration/docker/test_docs.py"]


def normal(text: str) -> list[str]:
    text = re.sub(r"Facts   \w+ ", "Facts   HOST ", text)
    text = re.sub(r"ulimit -n  \d+    CPUs [\d.]+", "ulimit -n  N    CPUs N", text)
    return re.sub(r"(limit(?: [\d.]+ \w+)?), [\d.]+ \w+ used", r"\1, USED", text).rstrip().splitlines()


def shown(first: str) -> tuple[list[str], str]:
    """The block that starts with `first` (README.md's, and a manual page's the same): the command after its `$ ` (if
    any), and the lines it shows."""
    (block,) = {b.body for b in BLOCKS if b.body.startswith(first)}
    lines = block.splitlines()
    if lines[0].startswith("$ "):
        return shlex.split(lines[0][2:].split("#")[0]), "\n".join(lines[1:])
    return [], "\n".join(lines)


def test_every_block_marked_for_this_file_is_one_of_its_tests():
    starts = [
        "$ shmdoctor explain",
        "FAIL  this loader needs 900 MiB",
        "$ shmdoctor audit trainer-a",
        "$ python examples",
        *CONSUMERS,
    ]
    assert {s for b in BLOCKS for s in starts if b.body.startswith(s)} == set(starts)
    assert all(sum(b.body.startswith(s) for s in starts) == 1 for b in BLOCKS)


def test_explain_in_the_container_where_the_job_died(images):
    command, output = shown("$ shmdoctor explain")
    assert command[:2] == ["shmdoctor", "explain"]
    proc = docker_run("-e", "NO_COLOR=1", cmd=["python", "-m", "shmdoctor", *command[1:]])
    assert proc.returncode == 1 and normal(proc.stdout) == normal(output), proc.stdout + proc.stderr


def test_the_failing_container_output_is_what_check_prints(images):
    """README.md's and docs/commands/check.md's failing container: the same command in a default container."""
    _, output = shown("FAIL  this loader needs 900 MiB")
    args = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
    proc = docker_run("-e", "NO_COLOR=1", cmd=["python", "-m", "shmdoctor", "check", *args])
    assert proc.returncode == 1 and normal(proc.stdout) == normal(output), proc.stdout + proc.stderr


def test_audit_of_two_containers(images):
    """trainer-a with Docker's defaults, trainer-b with --shm-size=2g --memory=700m, audited from the host."""
    command, output = shown("$ shmdoctor audit trainer-a")
    a, b = unique_name("trainer-a"), unique_name("trainer-b")
    sleep = ["shmdoctor-test/busybox:1", "sleep", "300"]
    try:
        for name, limits in ((a, []), (b, ["--shm-size=2g", "--memory=700m"])):
            subprocess.run(["docker", "run", "-d", "--name", name, "--network", "none", *limits, *sleep], check=True)
        argv = [{"trainer-a": a, "trainer-b": b}.get(arg, arg) for arg in command[1:]]
        proc = run_cli(*argv, env={"NO_COLOR": "1", "COLUMNS": "400"})
    finally:
        subprocess.run(["docker", "rm", "-f", a, b], capture_output=True)
    printed = (proc.stdout + proc.stderr).replace(a, "trainer-a").replace(b, "trainer-b")  # the note: on stderr
    # the names are longer here: the table's columns widen with them
    squeeze = [re.sub(r"  +", "  ", line) for line in printed.rstrip().splitlines()]
    assert proc.returncode == 1 and squeeze == [re.sub(r"  +", "  ", line) for line in output.splitlines()]


def test_train_py_stops_before_its_first_batch(images):
    command, output = shown("$ python examples/train.py")
    proc = docker_run(cmd=command)
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.splitlines()[-1] == output.strip()


# docs/consumers.md's blocks, each with the container its prose names
CONSUMERS = {
    "$ shmdoctor check --batch-size 100 --num-workers 4 --sample-bytes 1MiB": (
        ["--shm-size=1g", "-e", "LOCAL_WORLD_SIZE=8", "-e", "NCCL_P2P_DISABLE=1"],
        "shmdoctor-test/python:1",
        1,
    ),
    "$ shmdoctor check --ray-object-store auto": (["--shm-size=64m", "--memory=4g"], "shmdoctor-test/ray:1", 0),
}


@pytest.mark.parametrize("first", CONSUMERS)
def test_a_consumer_check_is_what_check_prints(images, first):
    command, output = shown(first)
    args, image, code = CONSUMERS[first]
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
        missing(f"test image {image} is missing (scripts/build-test-images.sh builds it)")  # a failure under CI=true
    proc = docker_run(*args, "-e", "NO_COLOR=1", cmd=["python", "-m", *command], image=image)
    assert proc.returncode == code and normal(proc.stdout) == normal(output), proc.stdout + proc.stderr
