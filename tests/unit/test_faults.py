"""When the patient is failing: Ctrl-C in every command, and /dev/shm full, absent, read-only, /proc partly unreadable.

Each fault is made for real in a container and `check`, `watch` and `clean` run inside it: a finding or a one-line
error with a defined exit code, never a traceback. Interrupts are real SIGINTs sent to real subprocesses.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import PYTHON, REPO, docker_run

from shmdoctor.probe import holders
from shmdoctor.segments import creator_pid

INTERRUPTED = 130
WAIT = 30  # seconds a step may take before the test gives up (a hang, not a speed limit)


# --- Ctrl-C -------------------------------------------------------------------------------------------------------


def _start(*args: str, cwd=REPO, env=None, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _interrupt(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("still running after SIGINT")
    assert "Traceback" not in err, err
    # Click writes an empty line first (after the terminal's ^C) when the interrupt reaches it
    return proc.returncode, out, "\n".join(line for line in err.splitlines() if line)


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


def test_ctrl_c_in_check_while_it_imports_a_dataset(tmp_path):
    marker = tmp_path / "importing"
    (tmp_path / "slowset.py").write_text(
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(600)\n"
    )
    proc = _start("check", "--batch-size", "8", "--num-workers", "2", "--dataset", "slowset:data", cwd=tmp_path)
    _wait_for(marker.exists, "the dataset module to be imported")
    code, _, err = _interrupt(proc)
    assert code == INTERRUPTED and err.splitlines() == ["shmdoctor: interrupted"]


def test_ctrl_c_in_watch_prints_the_summary_then_exits_130():
    proc = _start("watch", "--interval", "0.1")
    assert proc.stdout.readline().startswith("watching /dev/shm")
    assert "used" in proc.stdout.readline()  # the first sample
    code, out, err = _interrupt(proc)
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
    assert json.loads(proc.stdout.readline())["type"] == "sample"  # its handlers are in place by now
    proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("watch did not stop")
    assert proc.returncode == code and "Traceback" not in err
    assert json.loads(out.splitlines()[-1])["interrupted"] is True


CLEAN_INTERRUPTED = """
import json, os, signal, subprocess, sys, time
d, n = "/dev/shm", 30000  # a tmpfs: its size shrinks with each removal
for i in range(n):
    open(os.path.join(d, f"nccl-{i:06d}"), "w").close()
full = os.stat(d).st_size
proc = subprocess.Popen([sys.executable, "-m", "shmdoctor", "clean", "--yes", "--format", "json"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.monotonic() + 60
while os.stat(d).st_size == full and time.monotonic() < deadline:
    time.sleep(0.01)
proc.send_signal(signal.SIGINT)
out, err = proc.communicate()
print(json.dumps({"rc": proc.returncode, "stderr": err, "doc": json.loads(out), "n": n, "left": len(os.listdir(d))}))
"""


@pytest.mark.docker
def test_ctrl_c_in_clean_reports_exactly_what_it_removed(images):
    # In a container: --yes without names, on a /dev/shm of its own.
    proc = docker_run(
        "--name",
        f"sdt-faults-clean-{os.getpid()}",
        "--shm-size=64m",
        cmd=["python", "-c", CLEAN_INTERRUPTED],
        image=PYTHON,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.splitlines()[-1])
    assert "Traceback" not in r["stderr"], r["stderr"]
    assert r["rc"] == INTERRUPTED, "it finished before the SIGINT landed"
    assert [line for line in r["stderr"].splitlines() if line] == ["shmdoctor: interrupted"]
    doc = r["doc"]
    assert doc["interrupted"] and 0 < len(doc["removed"]) == r["n"] - r["left"]


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
    proc = _start("audit", env={"DOCKER_HOST": url})
    server.settimeout(WAIT)
    connection, _ = server.accept()  # it connected, and now waits for an answer that never comes
    code, _, err = _interrupt(proc)
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
    proc = _start("lint", "-", stdin=subprocess.PIPE)  # nothing written, never closed: it waits
    _wait_for(lambda: _reading_stdin(proc.pid), "lint to read stdin")
    code, _, err = _interrupt(proc)
    assert code == INTERRUPTED and err.splitlines() == ["shmdoctor: interrupted"]


@pytest.mark.torch
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
    workers = lambda: [p for p in tree.children(recursive=True) if p.name() == "pt_data_worker"]  # noqa: E731
    _wait_for(lambda: len(workers()) == 2, "a config's DataLoader workers")
    descendants = tree.children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("bench still running after Ctrl-C")
    assert proc.returncode == INTERRUPTED and "Traceback" not in err
    assert [line for line in err.splitlines() if line][-1] == "shmdoctor: interrupted"
    _wait_for(
        lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in descendants),
        "the workers to be gone",
    )
    pids = {p.pid for p in descendants}
    held = [h.pid for h in holders.scan("/dev/shm").holders if h.pid in pids]
    named = [n for n in os.listdir("/dev/shm") if creator_pid(n) in pids]
    assert held == [] and named == []


def test_ctrl_c_in_bench_after_a_config_shows_what_finished(torch_module):
    """The configs that ended are still reported, the one running is stopped and cleaned up: exit 130."""
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
    assert [r["num_workers"] for r in doc["results"]] == [0] and doc["recommendation"]["num_workers"] == 0


# --- faults, made for real in containers --------------------------------------------------------------------------

RUN_ALL = """
import json, subprocess, sys
out = {}
for spec in sys.argv[1:]:
    p = subprocess.run([sys.executable, "-m", "shmdoctor", *spec.split()], capture_output=True, text=True)
    out[spec] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
print(json.dumps(out))
"""
CHECK, WATCH, CLEAN, CLEAN_YES = (
    "check --format json",
    "watch --duration 1 --format json",
    "clean --format json",
    "clean --yes --format json",
)


def _fault(*docker_args: str, setup: str = "", user: str = "", commands=(CHECK, WATCH, CLEAN)) -> dict:
    """Run the commands inside a container made with docker_args after `setup` (as root); user: setpriv to it."""
    drop = f"setpriv --reuid={user} --regid={user} --clear-groups " if user else ""
    script = f'{setup}\nexec {drop}python -c "$RUN_ALL" ' + " ".join(f"'{c}'" for c in commands)
    proc = docker_run(
        "--name",
        f"sdt-faults-{os.getpid()}-{time.monotonic_ns()}",
        "-e",
        f"RUN_ALL={RUN_ALL}",
        *docker_args,
        cmd=["sh", "-c", script],
        image=PYTHON,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.splitlines()[-1])
    for spec, r in results.items():
        assert "Traceback" not in r["stderr"], (spec, r["stderr"])
        if r["rc"] in (2, 3):
            assert len(r["stderr"].strip().splitlines()) == 1, (spec, r["stderr"])
    return results


def _doc(r: dict) -> dict:
    return json.loads(r["stdout"])


def _jsonl(r: dict) -> list[dict]:
    return [json.loads(line) for line in r["stdout"].splitlines()]


def _ids(r: dict) -> list[str]:
    return [f["id"] for f in _doc(r)["findings"]]


@pytest.mark.docker
def test_full_shm(images):
    leak = "dd if=/dev/zero of=/dev/shm/nccl-leak01 bs=64k count=64 2>/dev/null"  # 4 MiB into 1 MiB: full
    r = _fault("--shm-size=1m", setup=leak, commands=(CHECK, WATCH, CLEAN, CLEAN_YES, "check --format json --x"))
    assert r[CHECK]["rc"] == 0 and "shm-full" in _ids(r[CHECK])
    summary = _jsonl(r[WATCH])[-1]
    assert r[WATCH]["rc"] == 0 and summary["peak_bytes"] == summary["size_bytes"] == 1024**2
    assert r[CLEAN]["rc"] == 0 and [e["name"] for e in _doc(r[CLEAN])["leaked"]] == ["nccl-leak01"]
    assert r[CLEAN_YES]["rc"] == 0 and _doc(r[CLEAN_YES])["freed_bytes"] == 1024**2
    assert r["check --format json --x"]["rc"] == 2  # a bad flag stays a usage error when the patient is failing


@pytest.mark.docker
def test_full_shm_is_judged_against_a_loader(images):
    fill = "dd if=/dev/zero of=/dev/shm/fill bs=64k count=64 2>/dev/null"
    loader = "--batch-size 8 --num-workers 2 --sample-bytes 64k"
    r = _fault("--shm-size=1m", setup=fill, commands=(f"{CHECK} {loader}", f"{WATCH} {loader}", CLEAN_YES))
    assert r[f"{CHECK} {loader}"]["rc"] == 1 and _ids(r[f"{CHECK} {loader}"])[0] == "shm-too-small"
    assert _jsonl(r[f"{WATCH} {loader}"])[-1]["budget_bytes"] == 5 * 8 * 64 * 1024
    assert r[CLEAN_YES]["rc"] == 0 and _doc(r[CLEAN_YES])["unrecognised"]["count"] == 1  # 'fill' is left alone


@pytest.mark.docker
def test_absent_shm(images):
    r = _fault("--ipc=none")
    assert r[CHECK]["rc"] == 1 and _ids(r[CHECK])[0] == "no-shm"
    for spec, what in ((WATCH, "watch"), (CLEAN, "clean")):
        assert r[spec]["rc"] == 3
        message = f"shmdoctor: error: there is no /dev/shm here (--ipc=none?): nothing to {what}"
        assert r[spec]["stderr"].strip() == message


@pytest.mark.docker
def test_read_only_shm(images):
    r = _fault("--tmpfs", "/dev/shm:ro")
    assert r[CHECK]["rc"] == 1 and _ids(r[CHECK])[0] == "shm-read-only"
    assert r[WATCH]["rc"] == 0 and _jsonl(r[WATCH])[-1]["samples"] >= 2
    assert r[CLEAN]["rc"] == 0 and _doc(r[CLEAN])["leaked"] == []


@pytest.mark.docker
def test_read_only_shm_with_a_leak_it_cannot_remove(images, tmp_path):
    (tmp_path / "nccl-leak01").write_bytes(b"\0" * 8192)
    r = _fault("--mount", f"type=bind,src={tmp_path},dst=/dev/shm,readonly", commands=(CHECK, CLEAN_YES))
    assert _ids(r[CHECK])[0] == "shm-read-only"
    failed = _doc(r[CLEAN_YES])["failed"]
    assert r[CLEAN_YES]["rc"] == 1 and [(f["name"], f["why"]) for f in failed] == [
        ("nccl-leak01", "Read-only file system")
    ]
    assert (tmp_path / "nccl-leak01").exists()


@pytest.mark.docker
def test_proc_partly_unreadable(images):
    # root holds a segment through a descriptor /proc will not show to nobody; nobody runs shmdoctor.
    setup = (
        "head -c 8192 /dev/zero > /dev/shm/nccl-byroot && chown 65534 /dev/shm/nccl-byroot\n"
        "sh -c 'exec 3</dev/shm/nccl-byroot; touch /tmp/holding; exec sleep 600' &\n"
        "while [ ! -e /tmp/holding ]; do sleep 0.05; done"
    )
    r = _fault(setup=setup, user="65534", commands=(CHECK, WATCH, CLEAN_YES))
    assert r[CHECK]["rc"] == 0
    summary = _jsonl(r[WATCH])[-1]
    assert r[WATCH]["rc"] == 0 and any("(sleep 600): permission denied" in u for u in summary["unreadable"])
    doc = _doc(r[CLEAN_YES])
    assert any("permission denied" in u for u in doc["unreadable"])
    # /proc could not show the holder; the kernel's lease could, and the segment stays.
    assert r[CLEAN_YES]["rc"] == 0 and doc["removed"] == [] and doc["failed"] == []
    assert [(e["name"], e["why"]) for e in doc["kept"]] == [
        ("nccl-byroot", "a process /proc did not show has it open or mapped")
    ]
