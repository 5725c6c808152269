"""`shmdoctor check` inside real containers, each started the way users start theirs, with the seed's loader."""

import shlex

import pytest

from tests.helpers import docker_run, shmdoctor_in

SEED = ["check", "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
MiB, GiB = 2**20, 2**30

pytestmark = pytest.mark.usefixtures("images")


@pytest.mark.parametrize(
    "docker_args, source, size, ipc, verdict, rule",
    [
        ([], "docker-shm", 64 * MiB, "private", "fail", "shm-too-small"),
        (["--shm-size=2g"], "docker-shm", 2 * GiB, "private", "ok", None),
        (["--shm-size=768m"], "docker-shm", 768 * MiB, "private", "fail", "shm-too-small"),
        (["--ipc=host"], "host-ipc", None, "host", "ok", "ipc-host"),
        (["--ipc=none"], "none", None, "none", "fail", "no-shm"),
        (["--tmpfs", "/dev/shm:size=512m"], "tmpfs", 512 * MiB, "private", "fail", "shm-too-small"),
        (["--shm-size=2g", "--memory=700m"], "docker-shm", 2 * GiB, "private", "fail", "memory-limit"),
        (["--shm-size=1g"], "docker-shm", 1 * GiB, "private", "warn", "thin-headroom"),
    ],
)
def test_check_in_real_containers(docker_args, source, size, ipc, verdict, rule):
    code, report = shmdoctor_in(*docker_args, args=SEED)
    assert report["shm"]["source"] == source
    if size is not None:
        assert report["shm"]["size_bytes"] == size
    assert report["ipc"]["mode"] == ipc
    assert report["verdict"] == verdict and code == (1 if verdict == "fail" else 0)
    assert report["target"]["kind"] == "local" and report["runtime"] == "docker"
    if rule:
        assert rule in [f["id"] for f in report["findings"]]


def test_memory_limit_is_read_and_the_fix_raises_it():
    _, report = shmdoctor_in("--shm-size=2g", "--memory=700m", args=SEED)
    assert report["memory"]["limit_bytes"] == 700 * MiB
    finding = next(f for f in report["findings"] if f["id"] == "memory-limit")
    assert finding["fixes"][0]["docker_args"][0].startswith("--memory=")


def test_facts_only_in_a_default_container_warns_of_64_mib():
    code, report = shmdoctor_in(args=["check"])
    assert code == 0 and report["verdict"] == "warn"
    assert [f["id"] for f in report["findings"]] == ["default-shm"]


def test_low_ulimit_is_a_warning():
    code, report = shmdoctor_in("--shm-size=2g", "--ulimit", "nofile=64:64", args=SEED)
    assert report["nofile"] == 64 and "nofile-low" in [f["id"] for f in report["findings"]]


def test_text_report_puts_the_fix_first():
    proc = docker_run(cmd=["python", "-m", "shmdoctor", *SEED])
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and lines[0].startswith("FAIL")
    assert lines[2].startswith("Fix   docker run --shm-size=1536m")


def test_closed_loop_the_recommended_size_makes_the_real_loader_run():
    """64 MiB: check fails and the seed's real DataLoader dies of it; the size check recommends makes it run."""
    code, report = shmdoctor_in(args=SEED)
    fix = report["findings"][0]["fixes"][0]
    assert fix["command"] == "docker run --shm-size=1536m ..."  # 900 MiB + 25%, rounded up; the engine named
    flags = shlex.split(fix["command"])[2:-1]  # docker run FLAGS ...: run with the flags of the command check wrote
    train = ["python", "examples/train.py", "--batches", "12", "--step", "0.1", "--no-preflight"]

    failed = docker_run(cmd=train)
    assert failed.returncode == 1 and "unable to allocate shared memory" in failed.stderr, failed.stdout + failed.stderr

    fixed = docker_run(*flags, cmd=train)
    assert fixed.returncode == 0 and "trained on 12 batches" in fixed.stdout, fixed.stdout + fixed.stderr


def test_preflight_on_a_real_dataloader():
    """examples/train.py calls shmdoctor.preflight(loader) before its first epoch: it stops with the fix, or runs."""
    train = ["python", "examples/train.py", "--batches", "4"]
    stopped = docker_run(cmd=train)
    assert stopped.returncode == 1 and "preflight: this loader needs 900 MiB" in stopped.stderr
    assert "fix: docker run --shm-size=1536m" in stopped.stderr
    ran = docker_run("--shm-size=2g", cmd=train)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines() == ["preflight: ok: needs 900 MiB of /dev/shm", "trained on 4 batches"]


def test_preflight_with_settings_returns_the_report():
    code = (
        "import shmdoctor; r = shmdoctor.preflight(batch_size=100, num_workers=4, prefetch_factor=2, "
        "sample_bytes=2**20); print(r.verdict, r.requirement.bytes)"
    )
    ok = docker_run("--shm-size=2g", cmd=["python", "-c", code])
    assert ok.stdout.split() == ["ok", str(900 * MiB)], ok.stderr
    low = docker_run(cmd=["python", "-c", code])
    assert "InsufficientSharedMemoryError" in low.stderr and low.returncode == 1


@pytest.mark.parametrize("docker_args", [[], ["--shm-size=2g", "--memory=700m"], ["--tmpfs", "/dev/shm:size=512m"]])
def test_every_loader_that_fits_today_runs_for_real(docker_args):
    """Each 'fits today' alternative check prints, run as a real DataLoader in the same container, trains."""
    _, report = shmdoctor_in(*docker_args, args=SEED)
    alternatives = [fix["loader"] for f in report["findings"] for fix in f["fixes"] if fix["loader"]]
    assert alternatives
    flags = {"batch_size": "--batch-size", "num_workers": "--workers", "prefetch_factor": "--prefetch-factor"}
    for loader in alternatives:
        args = [a for k, v in loader.items() for a in (flags[k], str(v))]
        proc = docker_run(
            *docker_args,
            cmd=["python", "examples/train.py", "--batches", "12", "--step", "0.1", "--no-preflight", *args],
        )
        assert proc.returncode == 0, f"{loader}: {proc.stderr[-500:]}"


def test_closed_loop_for_the_memory_limit():
    """900 MiB of batches in a 1 GiB container: check says OOM; the loader is OOM-killed; the --memory check
    recommends makes it train. --fill: the loop's first step lasts until the whole prefetch is in /dev/shm, as a step
    slower than loading makes it on any machine (a busy one's workers may never get ahead of a fixed short step)."""
    code, report = shmdoctor_in("--shm-size=2g", "--memory=1g", args=SEED)
    finding = next(f for f in report["findings"] if f["id"] == "memory-limit")
    memory = finding["fixes"][0]["docker_args"][0]
    assert code == 1 and memory.startswith("--memory=")
    train = ["python", "tests/loaders/failing.py", "seed", "--batches", "12", "--fill"]
    killed = docker_run("--shm-size=2g", "--memory=1g", cmd=train)
    assert killed.returncode != 0 and "trained" not in killed.stdout, killed.stdout
    fixed = docker_run("--shm-size=2g", memory, cmd=train)
    assert fixed.returncode == 0 and "trained on 12 batches" in fixed.stdout, fixed.stderr[-500:]
