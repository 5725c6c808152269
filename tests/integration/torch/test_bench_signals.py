"""bench under signals, for real: a subprocess, SIGTERM and Ctrl-C (SIGINT) sent to it the way `timeout`, `docker
stop` and a terminal do. What finished is printed, the exit is 143 or 130, every process of the run is gone within
seconds, and nothing is left in its TMPDIR. A signal at start-up and three quick Ctrl-C print no traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time

import psutil
import pytest

from tests.helpers import REPO

# Two configs: the first ends in about a second, the second would run for ~20 s (400 batches of a 0.05 s step).
SWEEP = [
    "--sample-bytes",
    "64k",
    "--batch-size",
    "4",
    "--num-workers",
    "0,2",
    "--step-time",
    "0.05",
    "--batches",
    "400",
]


def start(tmp_path, *args: str, bare: bool = False) -> subprocess.Popen:
    """bench in a subprocess, TMPDIR its own. bare: `python -S` with the package and site-packages on PYTHONPATH,
    as an installed script starts: the editable install's import hook at interpreter start-up is not ours."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "NO_COLOR": "1"}
    argv = [sys.executable, "-m", "shmdoctor", "bench", *args]
    if bare:
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]])
        argv.insert(1, "-S")
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def wait_for_line(proc: subprocess.Popen, prefix: str, timeout: float = 120) -> list[str]:
    lines, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return lines
    raise AssertionError(f"no {prefix!r} on stderr: {lines}")


def the_run(proc: subprocess.Popen) -> list[psutil.Process]:
    """bench's processes: the zygote, the config's child and its DataLoader workers (sessions of their own)."""
    return psutil.Process(proc.pid).children(recursive=True)


def gone_within(processes: list[psutil.Process], seconds: float) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize(
    "signum, code, word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")]
)
def test_a_signal_after_a_config_prints_it_and_ends_the_run(tmp_path, signum, code, word):
    proc = start(tmp_path, *SWEEP, "--format", "json")
    early = wait_for_line(proc, "[1/2]")
    time.sleep(1)  # the second config's workers are up
    run = the_run(proc)
    assert len(run) >= 4, run  # zygote, child, two workers
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == code, err
    assert f"shmdoctor: {word} after 1 of 2 configs" in err and "Traceback" not in "".join(early) + err
    doc = json.loads(out)
    ran, skipped = doc["results"]
    assert ran["num_workers"] == 0 and ran["status"] == "ok"
    assert skipped["num_workers"] == 2 and skipped["status"] == "skipped" and "stopped" in skipped["message"]
    assert gone_within(run, 5) == []
    assert os.listdir(tmp_path) == []


def test_sigterm_before_any_config_ended_says_so_and_leaves_nothing(tmp_path):
    proc = start(
        tmp_path,
        "--sample-bytes",
        "64k",
        "--batch-size",
        "4",
        "--num-workers",
        "2",
        "--step-time",
        "0.05",
        "--batches",
        "400",
    )
    deadline = time.monotonic() + 60
    while len(the_run(proc)) < 4 and time.monotonic() < deadline:  # the child and its workers are up
        time.sleep(0.1)
    run = the_run(proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 143 and out == ""
    assert err.strip().splitlines()[-1] == "shmdoctor: terminated" and "Traceback" not in err
    assert gone_within(run, 5) == []
    assert os.listdir(tmp_path) == []


def test_three_quick_ctrl_c_are_one_stop(tmp_path):
    proc = start(tmp_path, *SWEEP)
    wait_for_line(proc, "[1/2]")
    time.sleep(1)
    run = the_run(proc)
    for _ in range(3):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert out.startswith("RECOMMEND  num_workers=0")
    assert gone_within(run, 5) == []
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay", [0.0, 0.01, 0.02, 0.05, 0.1, 0.3, 0.6, 1.0])
def test_a_signal_at_start_up_prints_no_traceback(tmp_path, signum, delay):
    # From shmdoctor's first line on (__main__.py installs its handlers before it imports anything), a signal ends
    # the process quietly. Before that line Python itself is starting (runpy finding the package): a Ctrl-C there is
    # Python's own KeyboardInterrupt, whose traceback names no file of ours.
    proc = start(tmp_path, *SWEEP, bare=True)
    time.sleep(delay)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert "shmdoctor" not in err.partition("KeyboardInterrupt")[0] if "Traceback" in err else True, err
    assert proc.returncode in (128 + signum, -signum, 1), err  # -signum or 1: before Python ran a line of ours
    assert "Traceback" not in err or proc.returncode != 128 + signum
    assert os.listdir(tmp_path) == []
