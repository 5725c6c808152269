"""watch: statvfs and /proc samples, the summary, the pieces it adds up (a real DataLoader: tests/integration/torch)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from shmdoctor.commands import watch
from shmdoctor.shm import sampling
from shmdoctor.sizes import MiB
from tests.helpers import forked_cli, validate, watch_json


def test_budget_and_no_holder_scans_in_json():
    samples, summary = watch_json(
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
        proc = forked_cli(
            "watch", "--format", "json", "--duration", "0.5", "--interval", "0.1", "--holders-every", "0.1"
        )
        docs = [validate(json.loads(line)) for line in proc.stdout.splitlines()]
        ours = [h for d in docs for h in d.get("holders", []) if h["pid"] == holder.pid]
        assert ours and all(h["command"] == shown for h in ours)
        text = forked_cli("watch", "--duration", "0.5", "--interval", "0.1", "--holders-every", "0.1").stdout
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
        if signum == signal.SIGTERM and handler is sampling._stop:
            os.kill(os.getpid(), signal.SIGINT)  # delivered to the handler installed a moment ago
        return install(signum, handler)

    monkeypatch.setattr(signal, "signal", interrupted_install)
    code = watch.command.main(["--duration", "5", "--holders-every", "0"], standalone_mode=False)
    monkeypatch.undo()
    assert code == 130
    assert {s: signal.getsignal(s) for s in before} == before
    assert "(interrupted)" in capsys.readouterr().out
