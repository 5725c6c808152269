"""watch beside a real DataLoader with workers training on this machine: its holders, the text naming the budget."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import REPO, run_cli, watch_json

BATCH = 8 * 256 * 1024  # running.py's default batch: 8 samples of 256 KiB


@pytest.fixture
def loader(torch_module):
    """A real DataLoader (2 workers, file_descriptor strategy) training on this machine: its main and worker pids."""
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests/loaders/running.py"), "--seconds", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline().split()
        assert line and line[0] == "ready", "the loader did not start"
        yield [int(p) for p in line[1:]]
    finally:
        proc.kill()
        proc.wait()


def test_the_loaders_processes_hold_unlinked_segments(loader):
    samples, summary = watch_json("--duration", "2", "--interval", "0.2", "--holders-every", "0.5")
    ours = {h["pid"]: h for h in summary["holders"] if h["pid"] in loader}
    # The main process maps the batches it received; each worker the ones it made. All of them unlinked at once,
    # but for one a worker may be caught holding between its shm_open and its unlink.
    assert set(ours) == set(loader), summary["holders"]
    assert all(h["segments"] - 1 <= h["unlinked_count"] <= h["segments"] and h["segments"] > 0 for h in ours.values())
    # The main process maps whole batches; a worker may be caught with only the segment it is making, still empty
    # between its shm_open and its ftruncate (a CI run saw one under a batch)
    assert ours[loader[0]]["bytes"] >= BATCH
    assert all("running.py" in h["command"] for h in ours.values())
    assert summary["peak_bytes"] >= max(h["bytes"] for h in ours.values()) > 0
    assert summary["samples"] == len(samples) >= 2
    scanned = [s for s in samples if "holders" in s]
    assert 1 <= len(scanned) == summary["holder_scans"]
    assert all(s["used_bytes"] <= s["peak_bytes"] <= s["size_bytes"] for s in samples)


def test_text_names_the_loader_and_the_budget(loader):
    proc = run_cli(
        "watch",
        "--duration",
        "1.5",
        "--holders-every",
        "0.5",
        "--batch-size",
        "8",
        "--num-workers",
        "2",
        "--sample-bytes",
        "256KiB",
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.splitlines()[0].startswith("watching /dev/shm every 0.5 s")
    assert "budget 10 MiB (the loader's predicted need)" in out  # (2·2 + 1) × 2 MiB
    main = next(line for line in out.splitlines() if f"pid {loader[0]} " in line)
    assert "unlinked)" in main and "running.py" in main
    assert "\nSummary  " in out and "budget   10 MiB predicted for the loader" in out
