"""Ctrl-C in bench, with real DataLoader workers running: no worker and no segment left, what finished is shown.

Interrupts are real SIGINTs sent to real subprocesses (the rest: tests/unit/test_faults.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from shmdoctor.probe import holders
from shmdoctor.shm.segments import creator_pid
from tests.helpers import INTERRUPTED, REPO, WAIT, wait_for


def test_ctrl_c_in_bench_leaves_no_worker_and_no_segment(torch_module):
    import psutil

    # As a terminal does: SIGINT to the whole foreground process group, while configs run in their own sessions.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shmdoctor",
            "bench",
            "--sample-bytes",
            "256k",
            "--batch-size",
            "8",
            "--num-workers",
            "2",
            "--step-time",
            "0.2",
            "--budget",
            "60",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    tree = psutil.Process(proc.pid)

    def alive(p: psutil.Process, name: str | None = None) -> bool:
        """Running, no zombie, of that name where one is given; one gone between two questions is gone (a CI run
        met a child that ended between its listing and its name)."""
        try:
            return p.is_running() and p.status() != psutil.STATUS_ZOMBIE and name in (None, p.name())
        except psutil.NoSuchProcess:
            return False

    workers = lambda: [p for p in tree.children(recursive=True) if alive(p, "pt_data_worker")]  # noqa: E731
    wait_for(lambda: len(workers()) == 2, "a config's DataLoader workers")
    descendants = tree.children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("bench still running after Ctrl-C")
    assert proc.returncode == INTERRUPTED and "Traceback" not in err
    assert [line for line in err.splitlines() if line][-1] == "shmdoctor: interrupted"
    wait_for(
        lambda: not any(alive(p) for p in descendants),
        "the workers to be gone",
    )
    pids = {p.pid for p in descendants}
    held = [h.pid for h in holders.scan("/dev/shm").holders if h.pid in pids]
    named = [n for n in os.listdir("/dev/shm") if creator_pid(n) in pids]
    assert held == [] and named == []


def test_ctrl_c_in_bench_after_a_config_shows_what_finished(torch_module):
    """The configs that ended are still reported, the one running is stopped, cleaned up and said: exit 130."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shmdoctor",
            "bench",
            "--sample-bytes",
            "256k",
            "--batch-size",
            "8",
            "--num-workers",
            "0,2",
            "--step-time",
            "0.2",
            "--budget",
            "60",
            "--format",
            "json",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    first = proc.stderr.readline()  # the progress line of the first config: it has ended
    assert first.startswith("[1/2] num_workers=0: ok"), first
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == INTERRUPTED and "Traceback" not in err
    assert "shmdoctor: interrupted after 1 of 2 configs" in err
    doc = json.loads(out)
    # the one stopped is listed as not reached, as every config a sweep does not run is said
    said = [(r["num_workers"], r["status"], r.get("message", "")) for r in doc["results"]]
    assert said == [(0, "ok", ""), (2, "skipped", "not reached: the sweep was stopped")], said
    assert doc["recommendation"]["num_workers"] == 0
