"""When the patient is failing: Ctrl-C in check, watch, lint and audit; an engine that hangs or goes away.

Interrupts are real SIGINTs sent to real subprocesses; the engines are real unix sockets. The faults made in
containers are in tests/integration/docker/test_faults.py, Ctrl-C in bench in tests/integration/torch/.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.helpers import INTERRUPTED, REPO, WAIT, interrupt, start_cli, validate, wait_for

# --- Ctrl-C -------------------------------------------------------------------------------------------------------


def test_ctrl_c_in_check_while_it_imports_a_dataset(tmp_path):
    marker = tmp_path / "importing"
    (tmp_path / "slowset.py").write_text(
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(600)\n"
    )
    proc = start_cli("check", "--batch-size", "8", "--num-workers", "2", "--dataset", "slowset:data", cwd=tmp_path)
    wait_for(marker.exists, "the dataset module to be imported")
    code, _, err = interrupt(proc)
    assert code == INTERRUPTED and err.splitlines() == ["shmdoctor: interrupted"]


def test_ctrl_c_in_watch_prints_the_summary_then_exits_130():
    proc = start_cli("watch", "--interval", "0.1")
    assert proc.stdout.readline().startswith("watching /dev/shm")
    assert "used" in proc.stdout.readline()  # the first sample
    code, out, err = interrupt(proc)
    assert code == INTERRUPTED and err.splitlines() == ["shmdoctor: interrupted"]
    assert "\nSummary  " in out and "(interrupted)" in out


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, INTERRUPTED), (signal.SIGTERM, 128 + signal.SIGTERM)])
def test_watch_in_a_scripts_background_still_stops_with_its_summary(signum, code):
    # A shell starts background jobs with SIGINT ignored (`shmdoctor watch & ... kill -INT $!`): watch installs its
    # own handlers, so SIGINT, and SIGTERM (docker stop, timeout), still end it with the summary.
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731
    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "watch", "--interval", "0.1", "--format", "json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint,
    )
    assert validate(json.loads(proc.stdout.readline()))["type"] == "sample"  # its handlers are in place by now
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("watch did not stop")
    assert proc.returncode == code and "Traceback" not in err
    assert validate(json.loads(out.splitlines()[-1]))["interrupted"] is True


@pytest.fixture
def silent_engine(tmp_path):
    """A unix socket that accepts connections and never answers: an engine that hangs."""
    path = str(tmp_path / "docker.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(16)
    yield f"unix://{path}", server
    server.close()


def test_ctrl_c_in_audit_while_the_engine_hangs(silent_engine):
    url, server = silent_engine
    proc = start_cli("audit", env={"DOCKER_HOST": url})
    server.settimeout(WAIT)
    connection, _ = server.accept()  # it connected, and now waits for an answer that never comes
    code, _, err = interrupt(proc)
    connection.close()
    assert code == INTERRUPTED and err.splitlines() == ["shmdoctor: interrupted"]


@pytest.fixture
def engine_that_dies_after_listing(tmp_path):
    """A unix socket that answers as an engine does (its version, a list of two containers), then closes the
    connection on the first inspect: the engine going away in the middle of an audit."""
    import http.server
    import socketserver
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            path = self.path.split("?")[0]
            if path.endswith("/version") or path.endswith("/_ping"):
                body = {"ApiVersion": "1.41", "Version": "20.10.24"}
            elif path.endswith("/containers/json"):
                body = [{"Id": "a" * 64, "Names": ["/trainer-a"]}, {"Id": "b" * 64, "Names": ["/trainer-b"]}]
            else:  # an inspect: the engine is gone
                self.close_connection = True
                self.connection.close()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

        def address_string(self):  # a unix socket has no (host, port)
            return "engine"

    path = str(tmp_path / "dying.sock")
    server = socketserver.ThreadingUnixStreamServer(path, Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # shut down in 0.05 s, not 0.5
    yield f"unix://{path}"
    server.shutdown()
    server.server_close()


def test_the_engine_going_away_mid_audit_is_one_line_and_exit_3(engine_that_dies_after_listing):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shmdoctor",
            "audit",
            "--batch-size",
            "100",
            "--num-workers",
            "4",
            "--sample-bytes",
            "1MiB",
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
        cwd=REPO,
        env={**os.environ, "DOCKER_HOST": engine_that_dies_after_listing},
    )
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.returncode == 3, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("shmdoctor: error: the Docker engine at unix://") and "failed" in line


READ = {"x86_64": 0, "aarch64": 63}.get(os.uname().machine)  # the read(2) syscall's number


def _reading_stdin(pid: int) -> bool:
    """/proc/<pid>/syscall: the process sits in read(0, ...)."""
    with open(f"/proc/{pid}/syscall") as f:
        return f.read().split()[:2] == [str(READ), "0x0"]


@pytest.mark.skipif(READ is None, reason="the read(2) syscall number of this architecture is not in the table")
def test_ctrl_c_in_lint_while_it_reads_stdin():
    proc = start_cli("lint", "-", stdin=subprocess.PIPE)  # nothing written, never closed: it waits
    wait_for(lambda: _reading_stdin(proc.pid), "lint to read stdin")
    code, _, err = interrupt(proc)
    assert code == INTERRUPTED and err.splitlines() == ["shmdoctor: interrupted"]
