"""Where it ran is evidence (issue 35 item 1): this machine's facts only where the text comes from here; else what
the user states, what the text says (df, mount, docker run, compose, inspect, kubectl, a pod's log prefix), or
unknown. Texts are quoted from public threads with their source; sizes are written here."""

import json

import pytest

from shmdoctor.diagnose import judge, scan_text
from shmdoctor.diagnose.place import elsewhere, here
from shmdoctor.loader import loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.sizes import GiB, MiB
from tests.helpers import forked_cli, validate

# pytorch/pytorch#5040 (and XPixelGroup/BasicSR#59, where it was LMDB on a 64 GiB /dev/shm)
BUS = (
    "RuntimeError: DataLoader worker (pid 20991) is killed by signal: Bus error. It is possible that dataloader's "
    "workers are out of shared memory. Please try to raise your shared memory limit."
)
ENOSPC = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"


@pytest.mark.parametrize(
    ("line", "size", "said"),
    [
        # df -h in a container started without --shm-size (pytorch/pytorch#5040's thread): binary units
        ("shm              64M     0   64M   0% /dev/shm", 64 * MiB, "df, line 1"),
        ("tmpfs           7.8G  4.0K  7.8G   1% /dev/shm", int(7.8 * GiB), "df, line 1"),
        ("shm                65536     65536         0 100% /dev/shm", 64 * MiB, "df, line 1"),  # 1K-blocks
        ("shm on /dev/shm type tmpfs (rw,nosuid,nodev,noexec,relatime,size=65536k)", 64 * MiB, "the mount of"),
        ("$ docker run --gpus all -it --shm-size=8g --rm nvcr.io/nvidia/pytorch:24.01-py3", 8 * GiB, "docker run"),
        ("podman run --shm-size 512m img python train.py", 512 * MiB, "podman run --shm-size"),
        ('    shm_size: "2gb"', 2 * GiB, "shm_size, line 1"),
        ('            "ShmSize": 67108864,', 64 * MiB, "ShmSize, line 1"),
    ],
)
def test_the_text_says_the_size_of_dev_shm_where_it_ran(line, size, said):
    clues = scan_text(line).clues
    assert clues.shm_size == size and clues.shm_size_from.startswith(said)


@pytest.mark.parametrize(
    "line",
    [
        "shm              0     0   0   - /dev/shm",  # no size: not a df line of one
        "You can increase /dev/shm size by passing '--shm-size=1.26gb' to 'docker run'",  # Ray's advice, not a run
        "shm_size: lots",
    ],
)
def test_a_line_that_names_dev_shm_without_its_size_says_none(line):
    assert scan_text(line).clues.shm_size is None


def test_the_text_says_the_form_and_the_memory_limit_where_it_ran():
    run = scan_text("docker run --memory=2g --shm-size=1g img").clues
    assert (run.form, run.memory_said, run.shm_size) == ("docker", 2 * GiB, GiB)
    pod = scan_text("resources:\n  limits:\n    nvidia.com/gpu: 2\n    memory: 16Gi\n").clues
    assert (pod.form, pod.memory_said) == ("kubernetes", 16 * GiB)
    far = scan_text("limits:\n" + "a: 1\n" * 4 + "memory: 16Gi\n").clues  # five lines below: another key's
    assert far.memory_said is None
    assert scan_text("$ kubectl logs trainer-0 -n ml").clues.form == "kubernetes"
    # containerd's pod log file: the prefix says a pod, and the line is read past it
    cri = scan_text(f"2024-05-01T10:00:00.123456789Z stderr F {ENOSPC}")
    assert cri.clues.form == "kubernetes" and cri.diagnoses()[0].signature == "torch-shm-enospc"
    # docker logs -t has the time but no stream: not a pod
    assert scan_text(f"2024-05-01T10:00:00.123456789Z {ENOSPC}").clues.form is None


def test_a_place_is_stated_before_the_text_and_unknown_where_nothing_says():
    clues = scan_text("shm  64M  0  64M  0% /dev/shm").clues
    assert elsewhere().known == "unknown" and elsewhere().facts.shm.size_bytes is None
    read = elsewhere(clues)
    assert (read.known, read.facts.shm.size_bytes, read.form) == ("text", 64 * MiB, None)
    stated = elsewhere(clues, 2 * GiB, "kubernetes")
    assert (stated.known, stated.facts.shm.size_bytes, stated.form) == ("stated", 2 * GiB, "kubernetes")
    assert stated.said == "/dev/shm 2 GiB from --shm-size; kubernetes from --where"


def causes(text: str, place, **kw) -> list[tuple[str, str]]:
    return [(d.cause, d.reason) for d in judge(scan_text(text).diagnoses(), place, **kw).diagnoses]


def test_a_bus_error_in_an_unknown_place_is_shm_space_on_the_condition_that_tells():
    ex = judge(scan_text(BUS).diagnoses(), elsewhere())
    ((cause, reason),) = [(d.cause, d.reason) for d in ex.diagnoses]
    assert cause == "shm-space" and ex.exit_code == 1
    assert reason.startswith("if /dev/shm where it ran was small — containers get 64 MiB by default — this is it")
    assert reason.endswith("`df -h /dev/shm` there tells")
    # with the loader's settings the condition is its need: (2 × 4 + 1) × 100 MiB = 900 MiB
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes=MiB))
    ((_, reason),) = causes(BUS, elsewhere(), need=need)
    assert reason.startswith("if /dev/shm where it ran was below 900 MiB")


def test_a_bus_error_is_exonerated_only_where_the_size_where_it_ran_is_known():
    ((cause, reason),) = causes(BUS, elsewhere(shm_bytes=64 * GiB))  # BasicSR#59: 64 GiB of /dev/shm
    assert cause == "not-shm" and reason.startswith("/dev/shm where it ran was 64 GiB (/dev/shm 64 GiB from --shm")
    ((cause, reason),) = causes(BUS, elsewhere(shm_bytes=16 * GiB - 1))
    assert cause == "shm-space" and reason.startswith("/dev/shm where it ran was 16 GiB")
    # 900 MiB: fits 1 GiB, not 899 MiB
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes=MiB))
    assert causes(BUS, elsewhere(shm_bytes=GiB), need=need)[0][0] == "not-shm"
    assert causes(BUS, elsewhere(shm_bytes=899 * MiB), need=need)[0][0] == "shm-space"


def test_a_kill_and_a_missing_file_in_an_unknown_place_are_said_with_their_condition():
    ((cause, reason),) = causes("Killed", elsewhere())
    assert cause == "memory-limit" and reason.startswith("if a memory limit applied where it ran")
    ((cause, reason),) = causes("docker run -m 2g img\nKilled", elsewhere(scan_text("docker run -m 2g img").clues))
    assert cause == "memory-limit" and reason.startswith("a memory limit of 2 GiB applied where it ran")
    missing = "FileNotFoundError: [Errno 2] No such file or directory"  # Python's SemLock under --ipc=none, seen here
    ((cause, reason),) = causes(missing, elsewhere())
    assert cause == "shm-missing" and reason.startswith("if there was no /dev/shm where it ran")
    assert causes(missing, elsewhere(shm_bytes=64 * MiB))[0][0] == "not-shm"


def test_nccl_is_exonerated_by_a_dev_shm_where_it_ran_of_2_gib_not_by_this_machine():
    text = "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)"
    assert causes(text, elsewhere(shm_bytes=2 * GiB))[0][0] == "not-shm"
    big_here = Facts(Target("local", "h"), Shm(True, 64 * GiB, 0, 64 * GiB, "system"), Ipc("host"), Memory(None, 0))
    assert judge(scan_text(text).diagnoses(), big_here).diagnoses[0].cause == "not-shm"  # here: its facts decide


def test_one_failure_is_never_named_both_ways():
    """A worker's bus error above PyTorch's ENOSPC of the same failure, read here with 64 GiB free: before, the bus
    error was 'not shared memory' and the ENOSPC below it shm-space in one report."""
    big = Facts(Target("local", "h"), Shm(True, 64 * GiB, 0, 64 * GiB, "system"), Ipc("host"), Memory(None, 0))
    worker = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory."
    ex = judge(scan_text(worker + "\n" + ENOSPC).diagnoses(), here(big))
    assert [(d.signature, d.cause) for d in ex.diagnoses] == [
        ("torch-worker-bus-error", "shm-space"),
        ("torch-shm-enospc", "shm-space"),
    ]
    assert ex.diagnoses[0].reason == "line 2 says /dev/shm ran out: the same failure"


def test_the_cli_judges_a_pasted_log_by_its_place_and_a_job_piped_in_by_here(tmp_path):
    proc = forked_cli("explain", "-", "--format", "json", input_text=BUS + "\n")
    doc = validate(json.loads(proc.stdout))
    assert proc.returncode == 1 and doc["verdict"] == "fail"
    assert doc["place"] == {
        "known": "unknown",
        "shm_bytes": None,
        "memory_limit_bytes": None,
        "form": None,
        "said": "the text does not say where it ran",
    }
    assert doc["diagnoses"][0]["cause"] == "shm-space"
    proc = forked_cli("explain", "-", "--shm-size", "64g", "--format", "json", input_text=BUS + "\n")
    doc = validate(json.loads(proc.stdout))
    assert proc.returncode == 0 and doc["diagnoses"][0]["cause"] == "not-shm"
    assert (doc["place"]["known"], doc["place"]["shm_bytes"]) == ("stated", 64 * GiB)
    proc = forked_cli("explain", "-", "--here", "--format", "json", input_text=ENOSPC + "\n")
    assert proc.returncode == 1 and validate(json.loads(proc.stdout))["place"]["known"] == "here"
    text = forked_cli("explain", "-", "--where", "kubernetes", "--shm-size", "64m", input_text=BUS + "\n").stdout
    assert "Where it ran   stated: /dev/shm 64 MiB from --shm-size; kubernetes from --where" in text


@pytest.mark.parametrize(
    "args",
    [
        ("--here", "--shm-size", "1g"),
        ("--here", "--where", "docker"),
        ("--container", "x", "--here"),
        ("--shm-size", "lots"),
        ("--where", "nomad"),
    ],
)
def test_a_place_stated_twice_or_badly_is_a_usage_error(args):
    proc = forked_cli("explain", *args, input_text=BUS + "\n")
    assert proc.returncode == 2 and proc.stderr.startswith(("shmdoctor: error: ", "Usage:")), proc.stderr


def test_a_bare_nccl_system_error_is_ambiguous_with_how_to_tell_never_ok_nor_blamed():
    """Issue 35 item 6: vllm-project/vllm#10626's line alone, read anywhere: exit 0, verdict warn, and the way to
    tell (NCCL_DEBUG=INFO and the shm lines it prints), not a /dev/shm size."""
    line = (
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
        "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"
    )
    proc = forked_cli("explain", "-", "--format", "json", input_text=line + "\n")
    doc = validate(json.loads(proc.stdout))
    assert proc.returncode == 0 and doc["verdict"] == "warn"
    assert [d["cause"] for d in doc["diagnoses"]] == ["ambiguous"]
    (finding,) = doc["findings"]
    assert finding["severity"] == "warning" and "Error while creating shared memory segment" in finding["message"]
    assert [f["env"] for f in finding["fixes"]] == [{"NCCL_DEBUG": "INFO"}]
    text = forked_cli("explain", "-", input_text=line + "\n").stdout
    assert text.startswith("WARN  ambiguous: NCCL failed a system call")
