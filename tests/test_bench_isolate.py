"""Each config in its own process, on this machine with real loaders: a worker's bus error, ENOSPC or the run's
OOM kill is a result; no worker survives and no segment of the dead child stays in /dev/shm."""
import json
import os

import psutil
import pytest

from conftest import run_cli
from shmdoctor.bench import isolate
from shmdoctor.bench.model import Config
from shmdoctor.bench.run import Workload, job
from shmdoctor.bench.zygote import Zygote

pytestmark = pytest.mark.usefixtures("torch_module")
FAULTS = "tests.loaders.bench_faults"


def run(dataset, workers):
    work = Workload(batch_size=4, batch_bytes=16384, sample_bytes=4096, dataset=dataset, budget=20)
    with Zygote() as zygote:
        return isolate.run(job(work, Config(workers, 2 if workers else None, False, False)), timeout=120,
                           zygote=zygote)


def alive(pids):
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize(
    "dataset, says",
    [
        ("bus_error", "Unexpected bus error encountered in worker"),
        ("enospc", "No space left on device (28)"),
        ("kill_the_run", "killed by SIGKILL"),
    ],
)
def test_a_dying_config_is_a_result_and_leaves_no_process(dataset, says):
    out = run(f"{FAULTS}:{dataset}", 2)
    assert out.status == "shm-exhausted" and says in out.message
    assert len(out.pids) >= 2  # the child and its workers were seen
    assert alive(out.pids) == []


def test_segments_of_the_dead_child_are_removed_and_only_those(tmp_path):
    dead = psutil.Popen(["true"])
    dead.wait()
    names = [f"torch_{dead.pid}_1_0", f"torch_{os.getpid()}_2_0", "torch_1_3_0", "nccl-abc", "sem.x"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    removed = isolate.remove_segments(str(tmp_path), {dead.pid, os.getpid()})
    assert removed == (f"torch_{dead.pid}_1_0",)  # ours is alive, pid 1 is not the child's
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[1:])


def test_bench_on_this_machine_recommends_and_exits_1_when_a_config_ran_out():
    proc = run_cli("bench", "--dataset", f"{FAULTS}:bus_error", "--batch-size", "4", "--num-workers", "0,1",
                   "--format", "json", timeout=300)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert doc["schema"] == "shmdoctor/1" and doc["verdict"] == "fail" and doc["device"]["name"] == "cpu"
    zero, one = doc["results"]
    assert zero["status"] == "ok" and zero["batches"] >= 6 and zero["batch_seconds"] > 0
    assert one["status"] == "shm-exhausted" and "bus error" in one["message"]
    assert doc["recommendation"]["num_workers"] == 0
    finding = doc["findings"][0]
    assert finding["id"] == "bench-shm-exhausted" and finding["severity"] == "error" and finding["fixes"]
    for key in ("num_workers", "prefetch_factor", "pin_memory", "non_blocking", "status", "predicted_shm_bytes",
                "peak_shm_bytes", "data_wait_seconds", "batches_per_second", "samples_per_second", "bytes_per_second",
                "first_batch_seconds", "worker_startup_seconds"):
        assert key in zero


def test_text_puts_the_recommendation_first_and_progress_on_stderr():
    proc = run_cli("bench", "--sample-bytes", "64k", "--batch-size", "4", "--num-workers", "0,1", "--batches", "3",
                   timeout=300, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("RECOMMEND  num_workers=")
    assert any(line.split()[:3] == ["WORKERS", "PREFETCH", "STATUS"] for line in lines)
    assert "[2/2] num_workers=1, prefetch_factor=2: ok" in proc.stderr
