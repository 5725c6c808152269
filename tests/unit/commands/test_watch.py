"""watch: a real DataLoader with workers, seen through statvfs and /proc; the summary; the pieces it adds up."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from conftest import REPO, run_cli

from shmdoctor.commands import watch
from shmdoctor.commands.watch import Watch
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.render.watch import HEARTBEAT_S, Text
from shmdoctor.sizes import MiB

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


def _watch_json(*args: str) -> tuple[list[dict], dict]:
    proc = run_cli("watch", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [d["type"] for d in docs] == ["sample"] * (len(docs) - 1) + ["summary"]
    return docs[:-1], docs[-1]


@pytest.mark.torch
def test_the_loaders_processes_hold_unlinked_segments(loader):
    samples, summary = _watch_json("--duration", "2", "--interval", "0.2", "--holders-every", "0.5")
    ours = {h["pid"]: h for h in summary["holders"] if h["pid"] in loader}
    # The main process maps the batches it received; each worker the ones it made. All of them unlinked at once,
    # but for one a worker may be caught holding between its shm_open and its unlink.
    assert set(ours) == set(loader), summary["holders"]
    assert all(h["segments"] - 1 <= h["unlinked_count"] <= h["segments"] and h["segments"] > 0 for h in ours.values())
    assert all(h["bytes"] >= BATCH and "running.py" in h["command"] for h in ours.values())
    assert summary["peak_bytes"] >= max(h["bytes"] for h in ours.values()) > 0
    assert summary["samples"] == len(samples) >= 2
    scanned = [s for s in samples if "holders" in s]
    assert 1 <= len(scanned) == summary["holder_scans"]
    assert all(s["used_bytes"] <= s["peak_bytes"] <= s["size_bytes"] for s in samples)


@pytest.mark.torch
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


def test_budget_and_no_holder_scans_in_json():
    samples, summary = _watch_json(
        "--duration",
        "0.5",
        "--interval",
        "0.1",
        "--holders-every",
        "0",
        "--batch-size",
        "100",
        "--num-workers",
        "4",
        "--sample-bytes",
        "1MiB",
    )
    assert summary["budget_bytes"] == 900 * MiB  # FACTS.md: (2·4 + 1) × 100 MiB
    assert summary["holder_scans"] == 0 and summary["holders"] == []
    assert not any("holders" in s for s in samples)
    assert {s["budget_bytes"] for s in samples} == {900 * MiB}


def test_watch_adds_up_peak_and_biggest_holds():
    w = Watch()
    for t, used in ((0.0, 10), (0.5, 30), (1.0, 20)):
        w.sample(t, 100, used)
    assert (w.start_used, w.peak, w.peak_t, w.samples) == (10, 30, 0.5, 3)
    seg = lambda inode, n: Segment(inode, f"torch_{inode}", n, True)  # noqa: E731
    w.scanned(Holders((Holder(7, "a", (seg(1, 4096),)),), unreadable=("pid 1 (init): permission denied",)))
    w.scanned(Holders((Holder(7, "a", (seg(1, 4096), seg(2, 8192))), Holder(9, "b", (seg(3, 4096),)))))
    w.scanned(Holders(()))
    assert [(h.pid, h.bytes) for h in w.biggest()] == [(7, 12288), (9, 4096)]
    assert w.scans == 3 and w.unreadable == {"pid 1 (init): permission denied"}


def test_text_prints_a_sample_when_usage_or_holders_change_and_a_heartbeat_otherwise():
    text, w, now = Text("/dev/shm", None, 0.5, 2.0), Watch(), datetime.now(timezone.utc)
    held = Holders((Holder(7, "python train.py", (Segment(1, "torch_1", 4096, True),)),))
    printed = []
    for t, used, fresh in (
        (0.0, 10, None),
        (0.5, 10, None),
        (1.0, 20, None),
        (1.5, 20, held),
        (2.0, 20, held),
        (1.5 + HEARTBEAT_S, 20, None),
    ):
        w.sample(t, 100, used)
        printed.append(text.sample(t, now, 100, used, w, fresh))
    assert [p is not None for p in printed] == [True, False, True, True, False, True]
    assert printed[3].splitlines()[1].split()[:2] == ["pid", "7"] and "\n" not in printed[5]


HOLD = """
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
m[:] = b"1" * 8192
print("held", flush=True)
time.sleep(600)
"""


def test_holders_are_named_by_executable_and_script_never_their_arguments(tmp_path):
    script = tmp_path / "hold.py"
    script.write_text(HOLD)
    segment = f"/dev/shm/sdt-watch-{os.getpid()}"
    holder = subprocess.Popen(
        [sys.executable, str(script), segment, "--password=hunter2", "--token", "s3cr3t"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        shown = f"{os.path.basename(sys.executable)} {script}"
        proc = run_cli("watch", "--format", "json", "--duration", "0.5", "--interval", "0.1", "--holders-every", "0.1")
        docs = [json.loads(line) for line in proc.stdout.splitlines()]
        ours = [h for d in docs for h in d.get("holders", []) if h["pid"] == holder.pid]
        assert ours and all(h["command"] == shown for h in ours)
        text = run_cli("watch", "--duration", "0.5", "--interval", "0.1", "--holders-every", "0.1").stdout
        assert any(f"pid {holder.pid} " in line and line.endswith(shown) for line in text.splitlines()), text
        for out in (proc.stdout, text):
            assert "hunter2" not in out and "s3cr3t" not in out
    finally:
        holder.kill()
        holder.wait()
        os.unlink(segment)


def test_a_signal_between_installing_its_handlers_still_ends_in_a_summary(monkeypatch, capsys):
    # SIGINT lands after watch installed its SIGINT handler and before its SIGTERM one: a stop like any other, and
    # both handlers are given back.
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    install = signal.signal

    def interrupted_install(signum, handler):
        if signum == signal.SIGTERM and handler is watch._stop:
            os.kill(os.getpid(), signal.SIGINT)  # delivered to the handler installed a moment ago
        return install(signum, handler)

    monkeypatch.setattr(signal, "signal", interrupted_install)
    code = watch.command.main(["--duration", "5", "--holders-every", "0"], standalone_mode=False)
    monkeypatch.undo()
    assert code == 130
    assert {s: signal.getsignal(s) for s in before} == before
    assert "(interrupted)" in capsys.readouterr().out
