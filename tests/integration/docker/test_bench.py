"""`shmdoctor bench` on the CPU inside real containers: real DataLoaders against a real --shm-size."""

import json

import pytest

from tests.helpers import docker_run

pytestmark = pytest.mark.usefixtures("images")
# After the bench, from the same container: /dev/shm's use (statvfs) and its listing, on stderr.
AFTER = (
    "python -c \"import os, json; st = os.statvfs('/dev/shm'); print('after', json.dumps("
    "[(st.f_blocks - st.f_bfree) * st.f_frsize, os.listdir('/dev/shm')]))\" >&2"
)


def bench_in(*docker_args, args):
    cmd = "python -m shmdoctor bench --device cpu --format json " + " ".join(args) + "; echo rc=$? >&2; " + AFTER
    proc = docker_run(*docker_args, cmd=["sh", "-c", cmd])
    assert proc.stdout.strip(), proc.stderr
    rc = int(next(line for line in proc.stderr.splitlines() if line.startswith("rc="))[3:])
    used, names = json.loads(next(line for line in proc.stderr.splitlines() if line.startswith("after "))[6:])
    return rc, json.loads(proc.stdout), used, names


def test_peak_agrees_with_the_prediction_when_the_step_is_the_bottleneck():
    # 16 MiB batches loaded in ~35 ms by each worker, a 0.1 s step: the workers fill every prefetch slot.
    rc, doc, used, names = bench_in(
        "--shm-size=2g",
        args=[
            "--sample-bytes",
            "1MiB",
            "--batch-size",
            "16",
            "--item-latency",
            "0.002",
            "--step-time",
            "0.1",
            "--num-workers",
            "1,2",
        ],
    )
    assert rc == 0 and doc["verdict"] == "ok"
    for r in doc["results"]:
        assert r["status"] == "ok" and r["stable"]
        assert r["predicted_shm_bytes"] == (2 * r["num_workers"] + 1) * 16 * 2**20
        assert 0.8 <= r["peak_to_predicted"] <= 1.0, r
    assert used == 0 and names == []


def test_64_mib_runs_0_workers_and_2_workers_run_out_leaving_nothing_behind():
    rc, doc, used, names = bench_in(
        args=["--sample-bytes", "4MiB", "--batch-size", "8", "--num-workers", "0,2", "--batches", "3"]
    )
    zero, two = doc["results"]
    assert zero["status"] == "ok" and zero["batches"] == 3
    assert two["status"] == "shm-exhausted" and "unable to allocate shared memory" in two["message"], two
    assert two["predicted_shm_bytes"] == 5 * 32 * 2**20 and two["leftover_shm_bytes"] == 0
    assert rc == 1 and doc["verdict"] == "fail" and doc["recommendation"]["num_workers"] == 0
    finding = next(f for f in doc["findings"] if f["id"] == "bench-shm-exhausted")
    assert finding["fixes"][0]["docker_args"][0].startswith("--shm-size=")
    assert used == 0 and names == []  # no segment of the failed run, named or unlinked, is left in /dev/shm


def test_a_memory_limit_that_cannot_hold_the_batches_is_an_oom_kill_and_a_result():
    # 128 MiB batches, 4 workers: (2·4+1) × 128 MiB of /dev/shm, charged to a 1 GiB memory limit; a slow step, so
    # that the workers fill every slot even on a loaded machine
    rc, doc, used, names = bench_in(
        "--shm-size=2g",
        "--memory=1g",
        args=[
            "--sample-bytes",
            "8MiB",
            "--batch-size",
            "16",
            "--num-workers",
            "0,4",
            "--step-time",
            "0.4",
            "--batches",
            "6",
        ],
    )
    zero, four = doc["results"]
    assert zero["status"] == "ok"
    assert four["status"] == "shm-exhausted" and "OOM" in four["message"], four
    assert rc == 1 and doc["recommendation"]["num_workers"] == 0
    finding = next(f for f in doc["findings"] if f["id"] == "bench-shm-exhausted")
    assert any(arg.startswith("--memory=") for fix in finding["fixes"] for arg in fix["docker_args"])
    assert used == 0 and names == []
