"""Each config in its own process, on this machine with real loaders: a worker's bus error, ENOSPC or the run's
OOM kill is a result; no worker survives and no segment of the dead child stays in /dev/shm."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import psutil
import pytest

from shmdoctor.bench import isolate
from shmdoctor.bench.model import Config
from shmdoctor.bench.workload import BenchWorkload, job
from shmdoctor.bench.zygote import Zygote
from shmdoctor.model import SHM
from shmdoctor.render import schema_file
from tests.helpers import run_cli

pytestmark = pytest.mark.usefixtures("torch_module")
FAULTS = "tests.loaders.bench_faults"


def run(dataset, workers):
    work = BenchWorkload(batch_size=4, batch_bytes=16384, sample_bytes=4096, dataset=dataset, budget=20)
    with tempfile.TemporaryDirectory() as tmp, Zygote(tmp) as zygote:
        return isolate.run(job(work, Config(workers, 2 if workers else None, False, False)), timeout=120, zygote=zygote)


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


MAP = (
    "import mmap, os, sys, time; m = mmap.mmap(os.open(sys.argv[1], os.O_RDWR), 1); print('held', flush=True); "
    "time.sleep(600)"
)


def test_segments_of_the_dead_child_are_removed_and_only_those():
    # On the real /dev/shm, which other PID namespaces may share: a name there before the config started is not
    # the child's even when its pid number matches, and one that someone maps stays (the kernel refuses the lease).
    dead = psutil.Popen(["true"])
    dead.wait()
    tag = os.getpid()
    name = lambda pid, n: f"torch_{pid}_{tag}_{n}"  # noqa: E731
    other_namespace = name(dead.pid, 0)
    left, mapped = name(dead.pid, 1), name(dead.pid, 2)
    not_segments = [f"torch_{dead.pid}_{tag}_utils.py", f"torch_{dead.pid}_{tag}"]
    ours_alive, pid_one = name(os.getpid(), 3), name(1, 4)
    paths, holder = [], None
    try:
        paths.append(os.path.join(SHM, other_namespace))
        Path(paths[0]).write_bytes(b"x")
        before = set(os.listdir(SHM))
        for n in (left, mapped, *not_segments, ours_alive, pid_one):
            paths.append(os.path.join(SHM, n))
            Path(paths[-1]).write_bytes(b"x")
        holder = psutil.Popen([sys.executable, "-c", MAP, os.path.join(SHM, mapped)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "held"
        removed = isolate.remove_segments(SHM, before, {dead.pid, os.getpid(), 1})
        assert removed == (left,)  # ours is alive, pid 1 too
        assert [p for p in paths if not os.path.exists(p)] == [os.path.join(SHM, left)]
    finally:
        if holder:
            holder.kill()
            holder.wait()
        for path in paths:
            if os.path.exists(path):
                os.unlink(path)


def test_bench_on_this_machine_recommends_and_exits_1_when_a_config_ran_out():
    proc = run_cli(
        "bench",
        "--dataset",
        f"{FAULTS}:bus_error",
        "--batch-size",
        "4",
        "--num-workers",
        "0,1",
        "--format",
        "json",
        timeout=300,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    jsonschema.validate(doc, json.loads(schema_file("shmdoctor/bench/1").read_text()))
    assert doc["schema"] == "shmdoctor/bench/1" and doc["verdict"] == "fail" and doc["device"]["name"] == "cpu"
    zero, one = doc["results"]
    assert zero["status"] == "ok" and zero["batches"] >= 6 and zero["batch_seconds"] > 0
    assert one["status"] == "shm-exhausted" and "bus error" in one["message"]
    assert doc["recommendation"]["num_workers"] == 0
    finding = doc["findings"][0]
    assert finding["id"] == "bench-shm-exhausted" and finding["severity"] == "error"
    # 48 KiB needed where gigabytes are free: no /dev/shm fix (a smaller one least of all), and a doubt said
    assert finding["fixes"] == [] and "look beyond /dev/shm" in finding["message"]
    for key in (
        "num_workers",
        "prefetch_factor",
        "pin_memory",
        "non_blocking",
        "status",
        "predicted_shm_bytes",
        "peak_shm_bytes",
        "data_wait_seconds",
        "batches_per_second",
        "samples_per_second",
        "bytes_per_second",
        "first_batch_seconds",
        "worker_startup_seconds",
    ):
        assert key in zero


def test_text_puts_the_recommendation_first_and_progress_on_stderr():
    proc = run_cli(
        "bench",
        "--sample-bytes",
        "64k",
        "--batch-size",
        "4",
        "--num-workers",
        "0,1",
        "--batches",
        "3",
        timeout=300,
        env={"NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("RECOMMEND  num_workers=")
    assert any(line.split()[:3] == ["WORKERS", "PREFETCH", "STATUS"] for line in lines)
    assert "[2/2] num_workers=1, prefetch_factor=2: ok" in proc.stderr


def test_the_parent_imports_neither_torch_nor_the_dataset_and_says_where_its_time_went():
    """torch is imported once, in the zygote: the device, the versions and a --dataset's batch come from a child of
    it (child.facts); the JSON's timeline has each step from the process's start, in order."""
    code = (
        "import sys; from shmdoctor.cli import main; code = main(['bench', '--dataset', 'tests.loaders.seed:seed_set', "
        "'--batch-size', '4', '--num-workers', '0', '--batches', '6', '--format', 'json']); "
        "print(sorted(m for m in ('torch', 'tests.loaders.seed') if m in sys.modules), code, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stderr.splitlines()[-1] == "[] 0", proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["workload"]["sample_bytes"] == 2**20 and doc["workload"]["batch_bytes"] == 4 * 2**20  # measured there
    assert doc["device"]["torch"].startswith("2.") and doc["device"]["sharing_strategy"] == "file_descriptor"
    steps = doc["timeline"]
    assert list(steps) == [
        "command",
        "torch_imported",
        "devices_known",
        "sweep_started",
        "first_config_ended",
        "sweep_ended",
    ]
    assert list(steps.values()) == sorted(steps.values()) and steps["command"] > 0


def test_a_dataset_that_cannot_be_read_is_a_usage_error_from_the_child():
    proc = run_cli("bench", "--dataset", "tests.loaders.seed:broken", "--batch-size", "4", timeout=300)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        "shmdoctor: error: dataset tests.loaders.seed:broken: reading sample 0 raised ValueError: corrupt record 0"
    ]
