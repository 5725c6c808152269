"""explain where the job ran (--here): the same bus-error text (the error line quoted in XPixelGroup/BasicSR#59,
under a traceback of its shape) is /dev/shm in Docker's 64 MiB and not shared memory with a big one, judged on the
facts of a real container."""

import json
import subprocess

import pytest

from tests.helpers import BUSYBOX, PYTHON, docker_run, run_cli, unique_name, validate

pytestmark = pytest.mark.usefixtures("images")
BASICSR = "tests/data/explain/basicsr-59.log"


def explain_in(*docker_args: str) -> tuple[int, dict]:
    proc = docker_run(*docker_args, cmd=["python", "-m", "shmdoctor", "explain", BASICSR, "--here", "--format", "json"])
    return proc.returncode, validate(json.loads(proc.stdout))


def test_a_bus_error_in_64_mib_is_shm_space():
    code, doc = explain_in()
    assert code == 1 and [d["cause"] for d in doc["diagnoses"]] == ["shm-space"]
    assert doc["shm"]["size_bytes"] == 64 * 2**20


def test_the_same_bus_error_with_a_big_shm_is_not_shared_memory():
    code, doc = explain_in("--shm-size=32g")
    assert code == 0 and [d["cause"] for d in doc["diagnoses"]] == ["not-shm"]
    assert "32 GiB free" in doc["findings"][0]["message"]


def test_an_oom_killed_container_without_a_log_is_judged_from_its_state():
    """A log driver that keeps nothing (`none`): the engine refuses the logs (501), State.OOMKilled still speaks."""
    name = unique_name("explain-oom-nolog")
    try:
        subprocess.run(
            ["docker", "run", "--name", name, "--network", "none", "--memory=16m", "--memory-swap=16m",
             "--log-driver", "none", BUSYBOX, "sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a)"],
            capture_output=True, timeout=120,
        )  # fmt: skip
        proc = run_cli("explain", "--container", name, "--format", "json")
        doc = validate(json.loads(proc.stdout))
        assert proc.returncode == 1, proc.stderr
        assert doc["oom_killed"] is True and [d["signature"] for d in doc["diagnoses"]] == ["container-oom-killed"]
        assert any("its log could not be read" in n for n in doc["notes"])
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)


@pytest.mark.parametrize(("command", "code"), [("exit 1", 1), ("exit 0", 0), ("exit 2", 2)])
def test_a_container_whose_log_cannot_be_read_is_not_ok(command, code):
    """`--log-driver none`, a State that shows no shared-memory failure (a failure, a success): nothing
    was read, so nothing is OK; could not probe (3), the reason in one line."""
    name = unique_name(f"explain-nolog-{code}")
    try:
        ran = subprocess.run(
            ["docker", "run", "--name", name, "--network", "none", "--log-driver", "none", BUSYBOX, "sh", "-c",
             f"echo 'RuntimeError: unable to allocate shared memory' >&2; {command}"],
            capture_output=True, timeout=120,
        )  # fmt: skip
        assert ran.returncode == code, ran.stderr
        for fmt in ("text", "json"):
            proc = run_cli("explain", "--container", name, "--format", fmt)
            assert proc.returncode == 3 and proc.stdout == "", proc.stdout
            assert proc.stderr == (
                f"shmdoctor: error: container {name}: its log could not be read (the engine gave none, log driver "
                "'none'), and its State alone shows no failure: nothing to judge\n"
            )
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)


@pytest.mark.parametrize(
    "tmpfs, user, code, signature, fix",
    [
        ("rw,mode=755", "1000:1000", "import torch; torch.zeros(10).share_memory_()", "torch-shm-denied", "chmod"),
        ("ro", "0:0", "import torch; torch.zeros(10).share_memory_()", "torch-shm-read-only", "mount"),
        (
            "rw,mode=755",
            "1000:1000",
            "import multiprocessing; multiprocessing.Lock()",
            "python-semlock-denied",
            "chmod",
        ),
        ("ro", "0:0", "import multiprocessing; multiprocessing.Lock()", "python-semlock-read-only", "mount"),
    ],
)
def test_a_dev_shm_that_refuses_segments_is_named_and_fixed_from_the_dead_container(tmpfs, user, code, signature, fix):
    """A real refusal: a tmpfs at /dev/shm not writable for the job's user, or mounted read-only. explain --container
    finds the text in the dead container's log and says why, with the fix of that refusal (no size: one would not
    help)."""
    name = unique_name("explain-refused")
    try:
        proc = subprocess.run(
            ["docker", "run", "--name", name, "--network", "none", "--user", user, "--tmpfs", f"/dev/shm:{tmpfs}",
             PYTHON, "python", "-c", code],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        proc = run_cli("explain", "--container", name, "--format", "json")
        doc = validate(json.loads(proc.stdout))
        assert proc.returncode == 1, proc.stderr
        assert [(d["signature"], d["cause"]) for d in doc["diagnoses"]] == [(signature, "shm-missing")]
        [finding] = doc["findings"]
        if fix == "chmod":
            assert [f["shell"] for f in finding["fixes"]] == ["chmod 1777 /dev/shm"]
        else:
            assert [f["summary"][:27] for f in finding["fixes"]] == ["mount /dev/shm read-write: "]
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)


def test_a_log_with_dockers_timestamps_is_read_as_the_log():
    """`docker logs -t` puts an RFC 3339 time before every line: the real SemLock failure of python/cpython#93253
    (semaphores in a 1 MiB /dev/shm) is found under it, the lines as numbered in the log."""
    name = unique_name("explain-timestamps")
    try:
        subprocess.run(
            ["docker", "run", "--name", name, "--network", "none", "--shm-size=1m", PYTHON, "python", "-c",
             "from multiprocessing import Array; a = [Array('b', 100) for _ in range(1000)]"],
            capture_output=True, timeout=300,
        )  # fmt: skip
        logs = subprocess.run(["docker", "logs", "-t", name], capture_output=True, text=True, timeout=120)
        assert logs.stderr.splitlines()[-1].endswith("Z OSError: [Errno 28] No space left on device")
        proc = run_cli("explain", "--format", "json", input_text=logs.stderr)
        doc = validate(json.loads(proc.stdout))
        assert proc.returncode == 1, proc.stderr
        [d] = doc["diagnoses"]
        assert (d["signature"], d["cause"], d["line"]) == (
            "python-semlock-enospc",
            "shm-space",
            len(logs.stderr.splitlines()),
        )
        assert d["excerpt"] == "OSError: [Errno 28] No space left on device"
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=120)
