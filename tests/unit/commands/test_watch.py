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
from tests.helpers import forked_cli, missing, validate, watch_json


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


def _holder_on_a_tmpfs_of_its_own(tmp_path, *args: str) -> tuple[subprocess.Popen, str]:
    """A holder in a mount namespace of its own, over a tmpfs mounted there on tmp_path (a user namespace too when
    we are not root): watched through /proc/<pid>/root, only its segment is on that device, whatever else uses
    /dev/shm meanwhile (watch's text lists the biggest holders only). Returns it and the directory to watch."""
    mount = f'mount -t tmpfs -o size=1m sdt-watch {tmp_path} && exec "$0" "$@"'
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    holder = subprocess.Popen(
        ["unshare", *user, "--mount", "--propagation", "private", "sh", "-c", mount, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if holder.stdout.readline().strip() != "held":
        holder.kill()
        missing(f"no tmpfs of the test's own (unshare --mount): {holder.communicate()[1].strip()}")
    return holder, f"/proc/{holder.pid}/root{tmp_path}"


def test_holders_are_named_by_executable_and_script_never_their_arguments(tmp_path):
    script = tmp_path.parent / f"{tmp_path.name}-hold.py"  # beside the mount point: the tmpfs hides what is under it
    script.write_text(HOLD)
    holder, directory = _holder_on_a_tmpfs_of_its_own(
        tmp_path, sys.executable, str(script), f"{tmp_path}/segment", "--password=hunter2", "--token", "s3cr3t"
    )
    try:
        shown = f"{os.path.basename(sys.executable)} {script}"
        watch = ("watch", "--path", directory, "--duration", "0.5", "--interval", "0.1", "--holders-every", "0.1")
        proc = forked_cli(*watch, "--format", "json")
        docs = [validate(json.loads(line)) for line in proc.stdout.splitlines()]
        scanned = [[(h["pid"], h["command"], h["bytes"]) for h in d["holders"]] for d in docs if "holders" in d]
        assert scanned and all(holders == [(holder.pid, shown, 8192)] for holders in scanned), scanned
        text = forked_cli(*watch).stdout
        assert any(f"pid {holder.pid} " in line and line.endswith(shown) for line in text.splitlines()), text
        for out in (proc.stdout, text):
            assert "hunter2" not in out and "s3cr3t" not in out
    finally:
        holder.kill()
        holder.wait()


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
