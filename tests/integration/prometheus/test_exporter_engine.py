"""The exporter against the real Docker engine: /dev/shm use read from the host equals `df` inside, labels and
findings of real containers, no environment value anywhere, and an engine that goes away or is slow."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.integration.prometheus.exporting import (
    Containers,
    SocketProxy,
    by_container,
    df_used,
    docker,
    exporter,
    samples,
)

pytestmark = pytest.mark.docker
MiB = 2**20
SECRET = f"sdt-secret-{os.getpid()}-do-not-export"
FILL = ("sh", "-c", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=61 2>/dev/null; sleep 600")


def _wait_for(exp, metric: str, name: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = exp.scrape()
        if name in by_container(text, metric):
            return text
        assert time.monotonic() < deadline, f"{name} never appeared in {metric}"
        time.sleep(0.3)


def test_use_read_from_the_host_is_what_df_says_inside(images):
    with Containers() as c:
        full, full_id = c.start("full", "--shm-size=64m", "-e", f"TOKEN={SECRET}", cmd=FILL)
        # a stand-in for a training job (its command names torchrun): without a loader, only such a job is warned
        trainer = ("sh", "-c", "sleep 600", "torchrun")
        big, _ = c.start("big", "--shm-size=256m", "--memory=192m", "--label", "team=vision", cmd=trainer)
        none, _ = c.start("none", "--ipc=none")
        with exporter() as exp:
            text = _wait_for(exp, "shmdoctor_shm_used_bytes", full)
            for _ in range(50):  # the container's dd may still be writing at its first scrape
                if by_container(text, "shmdoctor_shm_used_bytes")[full] >= 61 * MiB:
                    break
                time.sleep(0.2)
                text = exp.scrape()
            used = by_container(text, "shmdoctor_shm_used_bytes")
            assert used[full] == df_used(full) >= 61 * MiB  # statvfs through /proc/<pid>/root from the host
            assert used[big] == df_used(big) == 0
            assert by_container(text, "shmdoctor_shm_size_bytes")[full] == 64 * MiB
            assert by_container(text, "shmdoctor_memory_limit_bytes")[big] == 192 * MiB
            assert none not in by_container(text, "shmdoctor_shm_size_bytes")  # --ipc=none: no /dev/shm

            series = samples(text)
            labels = next(lab for lab, _ in series["shmdoctor_shm_size_bytes"] if lab["container"] == full)
            assert labels == {
                "container": full,
                "container_id": full_id,
                "image": "shmdoctor-test/busybox:1",
                "ipc_mode": "private",
                "source": "docker-shm",
            }
            findings = {(lab["container"], lab["id"], lab["severity"]) for lab, _ in series["shmdoctor_finding"]}
            assert (full, "shm-full", "warning") in findings  # 61 of 64 MiB: over 95%
            assert (big, "shm-over-memory", "warning") in findings  # 256 MiB of /dev/shm in 192 MiB
            assert (none, "no-shm", "error") in findings
            assert series["shmdoctor_engine_up"] == [({}, 1)]
            assert SECRET not in text and "TOKEN" not in text  # read-only: the environment is never read


def test_a_loader_label_gives_the_need_and_the_command_line_the_rest(images):
    with Containers() as c:
        labelled, _ = c.start(
            "labelled", "--shm-size=64m", "--label", "shmdoctor.loader=batch_size=8,sample_bytes=1MiB"
        )
        plain, _ = c.start("plain", "--shm-size=2g")
        with exporter("--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB") as exp:
            text = _wait_for(exp, "shmdoctor_need_bytes", plain)
            need = by_container(text, "shmdoctor_need_bytes")
            assert need[plain] == 900 * MiB  # (2·4 + 1) × 100 MiB from the command line
            assert need[labelled] == 72 * MiB  # (2·4 + 1) × 8 MiB: its label's batch, the command line's workers
            findings = {(lab["container"], lab["id"]) for lab, _ in samples(text)["shmdoctor_finding"]}
            assert (labelled, "shm-too-small") in findings and (plain, "shm-too-small") not in findings


def test_an_ignore_label_leaves_its_finding_out_and_one_naming_no_rule_is_bad_label(images):
    """Stand-ins for a training job on the engine's default 64 MiB (default-shm for each): the one whose
    shmdoctor.ignore label names it has no such series; one whose label names no rule has bad-label's."""
    job = ("sh", "-c", "sleep 600", "torchrun")
    with Containers() as c:
        quiet, _ = c.start("ignored", "--label", "shmdoctor.ignore=default-shm", cmd=job)
        typo, _ = c.start("typo", "--label", "shmdoctor.ignore=default-shmm", cmd=job)
        plain, _ = c.start("plain", cmd=job)
        with exporter() as exp:
            text = _wait_for(exp, "shmdoctor_shm_size_bytes", plain)
            text = _wait_for(exp, "shmdoctor_shm_size_bytes", quiet)
            text = _wait_for(exp, "shmdoctor_shm_size_bytes", typo)
            findings = {(lab["container"], lab["id"]) for lab, _ in samples(text)["shmdoctor_finding"]}
            assert (plain, "default-shm") in findings and (quiet, "default-shm") not in findings
            assert {(typo, "default-shm"), (typo, "bad-label")} <= findings


def test_a_container_started_after_the_exporter_appears_from_the_event_stream(images):
    with exporter() as exp, Containers() as c:
        exp.scrape()
        name, _ = c.start("late", "--shm-size=96m")
        assert (
            by_container(_wait_for(exp, "shmdoctor_shm_size_bytes", name, 10), "shmdoctor_shm_size_bytes")[name]
            == 96 * MiB
        )
        c.started.remove(name)
        docker("rm", "-f", name)
        deadline = time.monotonic() + 10
        while name in by_container(exp.scrape(), "shmdoctor_shm_size_bytes"):
            assert time.monotonic() < deadline, "a removed container stayed"
            time.sleep(0.3)


def test_the_engine_going_away_is_scrape_errors_and_the_exporter_keeps_serving(images, tmp_path):
    proxy = SocketProxy(tmp_path / "engine.sock")
    with Containers() as c:
        name, _ = c.start("away", "--shm-size=80m")
        with exporter("--timeout", "2", env={"DOCKER_HOST": proxy.docker_host}) as exp:
            text = _wait_for(exp, "shmdoctor_shm_size_bytes", name)
            assert samples(text)["shmdoctor_engine_up"] == [({}, 1)]
            proxy.close()
            deadline = time.monotonic() + 15
            while samples(text := exp.scrape())["shmdoctor_engine_up"] != [({}, 0)]:
                assert time.monotonic() < deadline, "the engine's going away was never said"
                time.sleep(0.3)
            deadline = time.monotonic() + 10
            while samples(exp.scrape())["shmdoctor_scrape_errors_total"][0][1] < 2:  # each reading says it again
                assert time.monotonic() < deadline, "a second reading without the engine was not counted"
                time.sleep(0.3)
            assert "" in by_container(text, "shmdoctor_shm_size_bytes")  # the host's own /dev/shm is still there
            assert exp.proc.poll() is None

            proxy = SocketProxy(tmp_path / "engine.sock")  # the engine is back: the exporter finds it again
            _wait_for(exp, "shmdoctor_shm_size_bytes", name, 20)
            assert samples(exp.scrape())["shmdoctor_engine_up"] == [({}, 1)]
            proxy.close()


def test_a_slow_engine_never_holds_a_scrape_past_its_timeout(images, tmp_path):
    proxy = SocketProxy(tmp_path / "slow.sock", hold=True)  # accepts, never answers
    try:
        with exporter("--timeout", "2", env={"DOCKER_HOST": proxy.docker_host}) as exp:
            for _ in range(2):
                text = exp.scrape(timeout=10)  # the hang bound: 5x --timeout; engine_up 0 says the timeout ended it
                series = samples(text)
                assert series["shmdoctor_engine_up"] == [({}, 0)]
                assert series["shmdoctor_scrape_errors_total"][0][1] >= 1
            exp.proc.send_signal(signal.SIGTERM)
            assert exp.proc.wait(10) == 143
            assert "Traceback" not in exp.proc.stderr.read()
    finally:
        proxy.close()


def test_leaked_bytes_are_the_known_segments_nobody_holds(images):
    """A PyTorch segment of a dead creator and an NCCL segment nobody holds are leaked; an NCCL segment a process
    holds open and a file shmdoctor does not know are not (the rules of `shmdoctor clean`)."""
    script = (
        "cd /dev/shm && dd if=/dev/zero of=torch_3999999_1_1 bs=1M count=3 2>/dev/null"
        " && dd if=/dev/zero of=nccl-Ab12Cd bs=1M count=1 2>/dev/null"
        " && dd if=/dev/zero of=nccl-Zz99Yy bs=1M count=2 2>/dev/null"
        " && dd if=/dev/zero of=data.bin bs=1M count=5 2>/dev/null"
        " && exec 3< nccl-Zz99Yy && sleep 600"
    )
    with Containers() as c:
        name, _ = c.start("leaks", "--shm-size=64m", cmd=("sh", "-c", script))
        deadline = time.monotonic() + 30
        while df_used(name) < 11 * MiB:  # written before the exporter's first look (the next is a minute later)
            assert time.monotonic() < deadline, "the container's files never appeared"
            time.sleep(0.2)
        with exporter() as exp:
            leaked = by_container(_wait_for(exp, "shmdoctor_leaked_bytes", name), "shmdoctor_leaked_bytes")
            assert leaked[name] == 4 * MiB
