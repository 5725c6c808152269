"""run's child on this machine: real processes, real signals, a real terminal (a pty) for Ctrl-C."""

import json
import os
import pty
import signal
import subprocess
import sys
import time

from shmdoctor.wrap.ring import Ring
from tests.helpers import REPO, forked_cli, validate

FAILING = str(REPO / "tests" / "loaders" / "failing.py")


def test_stdout_and_stderr_pass_through_unchanged_and_the_exit_code_comes_back():
    script = "import sys; sys.stdout.write('a\\rb\\rc\\n'); sys.stderr.write('10%\\r20%\\r100%\\n'); sys.exit(7)"
    argv = [sys.executable, "-m", "shmdoctor", "run", "--", sys.executable, "-c", script]
    proc = subprocess.run(argv, capture_output=True, cwd=REPO, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 7
    assert proc.stdout == b"a\rb\rc\n"  # byte for byte, and nothing of ours on stdout
    lines = proc.stderr.split(b"\n")
    assert lines[0].startswith(b"shmdoctor run: /dev/shm") and lines[1] == b"10%\r20%\r100%"
    assert b"exited 7" in proc.stderr


def test_stdin_is_the_childs():
    proc = forked_cli("run", "--", sys.executable, "-c", "print(input()[::-1])", input_text="olleh\n")
    assert proc.returncode == 0 and proc.stdout == "hello\n"


def test_a_signal_death_is_128_plus_n():
    proc = forked_cli("run", "--", "sh", "-c", "kill -KILL $$")
    assert proc.returncode == 137 and "(SIGKILL)" in proc.stderr


def test_a_missing_command_is_127_and_one_line():
    proc = forked_cli("run", "--", "no-such-command-sdt")
    assert proc.returncode == 127 and proc.stderr.strip().splitlines()[-1].startswith("shmdoctor: error: cannot run")


def _spawn_in_a_terminal(*args: str) -> tuple[int, int]:
    pid, master = pty.fork()
    if pid == 0:  # the child: a session leader with the pty as its controlling terminal
        os.execv(sys.executable, [sys.executable, "-m", "shmdoctor", "run", "--", *args])
    return pid, master


def _read_until(master: int, text: bytes, timeout: float = 30) -> bytes:
    out, end = b"", time.monotonic() + timeout
    while text not in out and time.monotonic() < end:
        try:
            out += os.read(master, 4096)
        except OSError:
            break
    return out


def test_ctrl_c_at_a_terminal_reaches_the_child_once():
    pid, master = _spawn_in_a_terminal(sys.executable, FAILING, "count-int")
    assert b"ready" in _read_until(master, b"ready")
    os.write(master, b"\x03")  # Ctrl-C: the terminal sends SIGINT to the foreground process group
    out = _read_until(master, b"exited")
    _, status = os.waitpid(pid, 0)
    assert b"got 1 SIGINT" in out and os.waitstatus_to_exitcode(status) == 130


def test_a_signal_sent_to_run_alone_is_forwarded():
    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "run", "--", sys.executable, FAILING, "count-int"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGINT)  # kill -INT <run's pid>: only run gets it
    out, err = proc.communicate(timeout=30)
    assert b"got 1 SIGINT" in out and proc.returncode == 130


def test_a_child_that_ignores_sigterm_keeps_running_and_its_code_comes_back():
    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "run", "--", sys.executable, FAILING, "ignore-term", "--until-line"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout.readline() == b"ready\n"
    proc.terminate()
    assert proc.stdout.readline() == b"ignoring SIGTERM\n"
    assert proc.poll() is None  # run waits for its child, which waits for our line: it does not leave it behind
    out, _ = proc.communicate(b"go\n", timeout=30)
    assert out == b"done\n" and proc.returncode == 0


def test_the_ring_keeps_the_last_bytes_from_a_line_start():
    ring = Ring(cap=100)
    for i in range(50):
        ring.append(f"line {i:03d}\n".encode())
    tail = ring.tail()
    assert len(tail) <= 100 and tail.startswith(b"line ") and tail.endswith(b"line 049\n")
    assert ring.total == 450 and ring.dropped == 450 - len(tail)
    ring.append(b"x" * 1000)
    assert ring.tail() == b"x" * 100


def test_the_report_is_valid_json_of_its_schema(tmp_path):
    report = tmp_path / "run.json"
    proc = forked_cli(
        "run", "--report", str(report), "--", "sh", "-c", "echo 'Bus error (core dumped)' >&2; kill -BUS $$"
    )
    assert proc.returncode == 135
    doc = validate(json.loads(report.read_text()))
    assert doc["exit_code"] == 135 and [d["signature"] for d in doc["diagnoses"]] == ["shell-bus-error"]
    assert doc["peak_bytes"] is not None and doc["size_bytes"] is not None


def test_a_report_path_that_cannot_be_written_is_exit_2_before_the_command_runs(tmp_path):
    proc = forked_cli("run", "--report", str(tmp_path / "no" / "such" / "dir.json"), "--", "sh", "-c", "echo ran")
    assert proc.returncode == 2 and "ran" not in proc.stdout and proc.stderr.startswith("shmdoctor: error: ")
