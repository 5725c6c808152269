"""run's child on this machine: real processes, real signals, a real terminal (a pty) for Ctrl-C."""

import json
import os
import pty
import resource
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from shmdoctor.wrap import child
from shmdoctor.wrap.ring import Ring
from tests.helpers import REPO, WAIT, forked_cli, validate, wait_for

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


def _read_until(master: int, text: bytes) -> bytes:
    """What the terminal shows until text, or all it showed in WAIT seconds (a read never blocks past them)."""
    out, end = b"", time.monotonic() + WAIT
    while text not in out and select.select([master], [], [], max(0, end - time.monotonic()))[0]:
        try:
            out += os.read(master, 4096)
        except OSError:  # the terminal's last process closed it
            break
    return out


def _exit_code(pid: int) -> int:
    """pid's exit code, waited for WAIT seconds at most: past them it is killed and the test fails (not a hang)."""
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], WAIT)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"pid {pid} still running after {WAIT} s")
    finally:
        os.close(fd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _line(proc: subprocess.Popen) -> bytes:
    """proc's next line of stdout within WAIT seconds, else it is killed and the test fails."""
    if not select.select([proc.stdout], [], [], WAIT)[0]:
        proc.kill()
        proc.wait()
        pytest.fail(f"no line from {proc.args[-1]!r} in {WAIT} s")
    return proc.stdout.readline()


# Two deliveries close together may make one (a signal already pending is not queued again): the group is said too,
# as the child sees it. A group of its own, the terminal's foreground: what the terminal sends reaches it alone, what
# is sent to run's group reaches it only through run.
IN_A_TERMINAL = """
import os
ppgrp = os.getpgid(os.getppid())
print("own group", os.getpgrp() != ppgrp, "foreground", os.tcgetpgrp(0) == os.getpgrp(), flush=True)
"""


def test_ctrl_c_at_a_terminal_reaches_the_child_once():
    pid, master = _spawn_in_a_terminal(sys.executable, "-c", IN_A_TERMINAL + COUNT_DELIVERIES)
    out = _read_until(master, b"ready")
    os.write(master, b"\x03")  # Ctrl-C: the terminal sends SIGINT to its foreground process group
    out += _read_until(master, b"exited")
    assert b"own group True foreground True" in out and b"got 1 SIGINT" in out and _exit_code(pid) == 0, out


def test_a_signal_sent_to_runs_group_at_a_terminal_reaches_the_child_once():
    """kill -INT -<run's group> while run is in the terminal's foreground: it reached the child twice (from the
    sender, and forwarded by run) when the child stayed in run's group there."""
    pid, master = _spawn_in_a_terminal(sys.executable, "-c", IN_A_TERMINAL + COUNT_DELIVERIES)
    out = _read_until(master, b"ready")
    os.killpg(os.getpgid(pid), signal.SIGINT)
    out += _read_until(master, b"exited")
    assert b"own group True foreground True" in out and b"got 1 SIGINT" in out and _exit_code(pid) == 0, out


# A shell's job control, as bash does it, in a terminal of its own: run in a process group of its own, given the
# terminal; a stop reported; `fg` (a line typed to it) gives the terminal back and continues the job.
SHELL = """
import os, signal, sys
signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # taking the terminal back from the background
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpid())
    signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    os.execv(sys.executable, [sys.executable, "-m", "shmdoctor", "run", "--", *sys.argv[1:]])
try:
    os.setpgid(pid, pid)  # as the child does: whichever runs first
except PermissionError:  # the child did, and ran run already
    pass
while True:
    _, status = os.waitpid(pid, os.WUNTRACED)
    os.tcsetpgrp(0, os.getpgrp())
    if not os.WIFSTOPPED(status):
        break
    print("shell: stopped by", signal.Signals(os.WSTOPSIG(status)).name, flush=True)
    if sys.stdin.readline() == "fg\\n":
        os.tcsetpgrp(0, pid)
        os.killpg(pid, signal.SIGCONT)
print("shell: exit", os.waitstatus_to_exitcode(status), flush=True)
"""
READS_THE_TERMINAL = "print('ready', flush=True); print('read', input(), flush=True)"


def test_ctrl_z_at_a_terminal_stops_the_job_and_fg_continues_it_with_the_terminal():
    pid, master = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", SHELL, sys.executable, "-c", READS_THE_TERMINAL])
    assert b"ready" in _read_until(master, b"ready")
    os.write(master, b"\x1a")  # Ctrl-Z: SIGTSTP to the foreground group, the child's; run stops the same way
    assert b"shell: stopped by SIGTSTP" in _read_until(master, b"shell: stopped by SIGTSTP")
    os.write(master, b"fg\n")
    os.write(master, b"go\n")  # read by the child: the terminal is its group's again
    out = _read_until(master, b"shell: exit 0")
    assert b"read go" in out and b"shell: exit 0" in out and _exit_code(pid) == 0, out


def test_a_signal_sent_to_run_alone_is_forwarded():
    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "run", "--", sys.executable, FAILING, "count-int"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert _line(proc) == b"ready\n"
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
    assert _line(proc) == b"ready\n"
    proc.terminate()
    assert _line(proc) == b"ignoring SIGTERM\n"
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


RUN = [sys.executable, "-m", "shmdoctor", "run", "--"]


def _bounded() -> None:  # each case under a memory bound (a time bound: its timeout), as test_bad_inputs.py beside
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


# Counts deliveries, not Python handler calls (two close deliveries make one call): the C handler writes a byte for
# each into the wakeup fd.
COUNT_DELIVERIES = """
import os, signal, time
r, w = os.pipe()
os.set_blocking(w, False)
signal.signal(signal.SIGINT, lambda *a: None)
signal.set_wakeup_fd(w)
print("ready", flush=True)
os.read(r, 1)
time.sleep(0.5)  # a second delivery, had there been one, is in by then
os.set_blocking(r, False)
rest = b""
try:
    rest = os.read(r, 100)
except BlockingIOError:
    pass
print(f"got {1 + len(rest)} SIGINT", flush=True)
"""


def test_a_signal_sent_to_runs_process_group_reaches_the_child_once():
    proc = subprocess.Popen(
        [*RUN, sys.executable, "-c", COUNT_DELIVERIES],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        start_new_session=True,  # no terminal: a scheduler, a container, CI
        preexec_fn=_bounded,
    )
    assert _line(proc) == b"ready\n"
    os.killpg(proc.pid, signal.SIGINT)  # kill -INT -<run's group>: it was run's forward and the group's, twice
    out, _ = proc.communicate(timeout=30)
    assert out == b"got 1 SIGINT\n" and proc.returncode == 0


def test_what_the_child_leaves_behind_keeps_its_stderr_after_run_exits(tmp_path):
    """A leftover writing after run is gone died of SIGPIPE (nothing read the pipe): a copy of run reads on."""
    go, done, err = tmp_path / "go", tmp_path / "done", tmp_path / "stderr"
    # the leftover writes once run has exited: when the test says so, not after a sleep
    wait_go = f"i=0; while [ ! -e {go} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"
    script = f"({wait_go}; echo late >&2; echo survived > {done}) & exit 0"
    with open(err, "wb") as stderr:
        proc = subprocess.run([*RUN, "sh", "-c", script], stderr=stderr, cwd=REPO, timeout=60, preexec_fn=_bounded)
    assert proc.returncode == 0
    go.touch()
    wait_for(lambda: done.exists() and done.read_text().endswith("\n"), "the leftover's line after run exited")
    assert done.read_text() == "survived\n"
    wait_for(lambda: b"late\n" in err.read_bytes(), "the leftover's stderr, copied after run exited")


def test_the_command_runs_when_run_cannot_print(tmp_path):
    ran = tmp_path / "ran"
    command = f"echo ran >> {ran}; exit 3"
    with open("/dev/full", "wb") as full:  # every write of ours fails: ENOSPC
        proc = subprocess.run([*RUN, "sh", "-c", command], stderr=full, cwd=REPO, timeout=60, preexec_fn=_bounded)
    assert proc.returncode == 3
    closed = subprocess.run(  # 2>&-: no stderr at all
        ["sh", "-c", 'exec "$@" 2>&-', "sh", *RUN, "sh", "-c", command], cwd=REPO, timeout=60, preexec_fn=_bounded
    )
    assert closed.returncode == 3 and ran.read_text() == "ran\nran\n"


def test_as_pid_1_run_reaps_orphans_and_passes_the_code_through():
    """In a PID namespace of its own (a container's entrypoint), orphans are run's to reap: none stays a zombie."""
    # The orphan's pid, then wait while it is there (running or a zombie): reaped, it is gone; not, it stays a zombie.
    count = (
        "p=$(sh -c 'sleep 0.1 & echo $!'); i=0; while [ -e /proc/$p ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); "
        "done; grep -l '^State:.*Z' /proc/[0-9]*/status | wc -l; exit 5"
    )
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", *RUN, "sh", "-c", count],
        capture_output=True,
        cwd=REPO,
        timeout=60,
        preexec_fn=_bounded,
    )
    assert proc.returncode == 5, proc.stderr
    assert proc.stdout.strip() == b"0"


def test_an_internal_error_keeps_the_childs_code_and_writes_the_report(tmp_path, monkeypatch):
    """A fault after the command ended (scanning its stderr, here): forked, so that the fault is there and run is the
    only thread of its process (sigtimedwait takes SIGCHLD in the main thread)."""
    from shmdoctor.wrap import session

    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(session, "scan_text", broken)
    report = tmp_path / "run.json"
    proc = forked_cli("run", "--report", str(report), "--", "sh", "-c", "exit 3", timeout=60, memory=2 * 2**30)
    assert proc.returncode == 3, proc.stderr
    doc = validate(json.loads(report.read_text()))
    assert doc["exit_code"] == 3 and doc["diagnoses"] == []
    assert "shmdoctor: error: internal error (ValueError at test_child.py:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_childs_log_says_how_many_gpus_nccl_joined(tmp_path):
    """NCCL's init line names 2 ranks: run asks for NCCL's whole need of 2 GPUs (139 MiB measured on two H200s),
    not the 8-GPU all-to-all figure it asks where nothing tells their number."""
    report = tmp_path / "run.json"
    log = (
        "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
        "h:1:2 [0] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x "
        "(size 9637888)\n"
    )
    proc = forked_cli("run", "--report", str(report), "--", "sh", "-c", f"printf '{log}' >&2; exit 1")
    assert proc.returncode == 1
    [finding] = validate(json.loads(report.read_text()))["explanation"]["findings"]
    assert "NCCL's whole /dev/shm for 2 local GPUs (the log: NCCL's nranks) is 139 MiB" in finding["message"]


def test_a_sigchld_that_another_thread_took_is_no_hang():
    """run takes SIGCHLD in its main thread, its own threads block it; a thread of the embedding program started
    before run does not, and takes the one that comes while run is not waiting (here: in on_spawn), where it is
    lost. The exit is polled too: run ends all the same, with the child's code. Forked: that thread is there alone."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            threading.Thread(target=threading.Event().wait, daemon=True).start()
            code = child.run(["sh", "-c", "exit 4"], Ring(), on_spawn=lambda _: time.sleep(0.5)).code
        finally:
            os._exit(code)
    assert _exit_code(pid) == 4
