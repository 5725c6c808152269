"""run as transparent as `env` (issue 38): the command dies with run, a file without #! runs, a death by a forwarded
signal is run's too (a shell loop stops), a terminal stays the command's stderr, the summary starts a line of its
own, and what /dev/shm looks like after a death is what is judged. Real processes, real signals, a real terminal
(a pty), real tmpfs mounts in a mount namespace of their own; each wait is on a condition, bounded by WAIT."""

import fcntl
import json
import os
import pty
import resource
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

from shmdoctor.wrap.child import FORWARDED
from tests.helpers import REPO, WAIT, validate

RUN = [sys.executable, "-m", "shmdoctor", "run"]
# Says its pid, then waits for a signal with every disposition at its default: it dies of whatever comes.
WAITS = "import os, signal; print(os.getpid(), flush=True); signal.pause()"


def _line(proc: subprocess.Popen) -> bytes:
    if not select.select([proc.stdout], [], [], WAIT)[0]:
        proc.kill()
        proc.wait()
        pytest.fail(f"no line from {proc.args!r} in {WAIT} s")
    return proc.stdout.readline()


def _gone(pid: int) -> bool:
    """Whether pid exits within WAIT seconds (a pidfd is readable once it has; it need not be our child)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], WAIT)[0])
    finally:
        os.close(fd)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGALRM, signal.SIGSEGV], ids=lambda s: s.name)
def test_the_command_dies_with_run_killed_by_a_signal_it_does_not_forward(signum):
    proc = subprocess.Popen([*RUN, "--", sys.executable, "-c", WAITS], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = int(_line(proc))
    proc.send_signal(signum)
    proc.communicate(timeout=WAIT)
    assert proc.returncode == -signum
    if not _gone(pid):
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the command (pid {pid}) outlived run killed by {signum.name}")


@pytest.mark.parametrize("signum", FORWARDED, ids=lambda s: s.name)
def test_a_forwarded_signal_that_kills_the_command_kills_run_after_its_summary_and_report(signum, tmp_path):
    """Sent to run alone (kill -N <run>): forwarded, the command dies of it, and so does run, as the command under
    env would have: its caller sees a death by N (a shell loop stops at Ctrl-C), the report says 128+N."""
    report = tmp_path / "run.json"
    proc = subprocess.Popen(
        [*RUN, "--report", str(report), "--", sys.executable, "-c", WAITS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    _line(proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == -signum and f"exited {128 + signum} ({signum.name})".encode() in err, err
    doc = validate(json.loads(report.read_text()))
    assert doc["exit_code"] == 128 + signum and doc["signals_forwarded"] == [signum.name]


def test_the_shell_around_run_still_sees_128_plus_n():
    shell = '"$@"; echo "shell saw $?" >&2'
    proc = subprocess.Popen(
        ["sh", "-c", shell, "sh", *RUN, "--", sys.executable, "-c", WAITS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    _line(proc)
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        [run] = [int(p) for p in f.read().split()]
    os.kill(run, signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT)
    assert b"shell saw 130" in err, err


def _cores_allowed() -> None:
    hard = resource.getrlimit(resource.RLIMIT_CORE)[1]
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def test_run_dying_of_sigquit_dumps_no_core_of_its_own(tmp_path):
    """SIGQUIT's default is a core dump: the command's is the command's business, shmdoctor's Python's is of no use
    (wherever the machine puts cores, the wait status says whether one was dumped)."""
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.fail("cores are not allowed here at all: the test would prove nothing")
    proc = subprocess.Popen(
        [*RUN, "--", sys.executable, "-c", WAITS],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=_cores_allowed,
    )
    _line(proc)
    proc.send_signal(signal.SIGQUIT)
    fd = os.pidfd_open(proc.pid)
    assert select.select([fd], [], [], WAIT)[0]
    os.close(fd)
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen is told
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGQUIT and not os.WCOREDUMP(status)


def test_a_command_that_exits_130_itself_is_an_exit_not_a_death():
    proc = subprocess.run([*RUN, "--", "sh", "-c", "exit 130"], capture_output=True, timeout=WAIT)
    assert proc.returncode == 130


def test_as_pid_1_where_the_kernel_ignores_the_signal_run_exits_128_plus_n():
    proc = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", *RUN, "--", "sh", "-c", "kill -TERM $$"],
        capture_output=True,
        cwd=REPO,
        timeout=WAIT,
    )
    assert proc.returncode == 143 and b"exited 143 (SIGTERM)" in proc.stderr


def test_a_file_without_a_shebang_runs_as_under_env(tmp_path):
    script = tmp_path / "job"
    script.write_text('echo "ran with $# args: $*"; exit 4\n')
    script.chmod(0o755)
    under_env = subprocess.run(["env", str(script), "a", "b c"], capture_output=True, timeout=WAIT)
    under_run = subprocess.run([*RUN, "--", str(script), "a", "b c"], capture_output=True, timeout=WAIT)
    assert under_env.returncode == under_run.returncode == 4
    assert under_run.stdout == under_env.stdout == b"ran with 2 args: a b c\n"


def test_a_file_that_is_not_executable_is_still_126(tmp_path):
    script = tmp_path / "job"
    script.write_text("echo ran\n")
    script.chmod(0o644)
    proc = subprocess.run([*RUN, "--", str(script)], capture_output=True, timeout=WAIT)
    assert proc.returncode == 126 and proc.stderr.startswith(b"shmdoctor: error: cannot run")


# A terminal: run in a pty of its own (a session leader with it as controlling terminal), 80 columns.


def _in_a_terminal(*argv: str) -> tuple[int, bytes]:
    pid, master = pty.fork()
    if pid == 0:
        os.execv(argv[0], list(argv))
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    out = b""
    fd = os.pidfd_open(pid)
    try:
        while select.select([master], [], [], WAIT)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:  # its last process closed it
                break
            if not data:
                break
            out += data
        if not select.select([fd], [], [], WAIT)[0]:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
        os.close(master)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), out


def _screen(output: bytes, columns: int = 80) -> list[str]:
    """The lines an 80-column terminal shows for this output (auto-wrap with a pending wrap at the last column, as
    xterm and the Linux console do); escape sequences are not expected."""
    lines, row, col, pending = [[]], 0, 0, False
    for ch in output.decode(errors="replace"):
        if ch == "\r":
            col, pending = 0, False
        elif ch == "\n":
            row, pending = row + 1, False
        else:
            if pending:
                row, col, pending = row + 1, 0, False
            while len(lines) <= row:
                lines.append([])
            line = lines[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
            if col == columns:
                col, pending = columns - 1, True
        while len(lines) <= row:
            lines.append([])
    return ["".join(line).rstrip() for line in lines]


FAILS_AT_A_TERMINAL = """
import os, sys
print("stderr is the terminal:", os.isatty(2) and os.path.samestat(os.fstat(2), os.fstat(0)), flush=True)
raise RuntimeError("unable to allocate shared memory(shm) for file </torch_1_2_3>: No space left on device (28)")
"""


def test_at_a_terminal_stderr_stays_the_terminal_and_the_failure_is_still_read(tmp_path):
    report = tmp_path / "run.json"
    code, out = _in_a_terminal(*RUN, "--report", str(report), "--", sys.executable, "-c", FAILS_AT_A_TERMINAL)
    assert code == 1, out
    assert b"stderr is the terminal: True" in out
    doc = validate(json.loads(report.read_text()))
    assert doc["stderr_read"] == "python" and doc["stderr_bytes"] > 0
    assert [d["signature"] for d in doc["diagnoses"]] == ["torch-shm-enospc"], doc["diagnoses"]


def test_at_a_terminal_a_program_that_is_not_python_sees_a_terminal_too():
    code, out = _in_a_terminal(*RUN, "--", "sh", "-c", "[ -t 2 ] && echo 'stderr: a terminal' >&2")
    assert code == 0 and b"stderr: a terminal" in out


def test_at_a_terminal_the_summary_starts_a_line_of_its_own():
    code, out = _in_a_terminal(*RUN, "--", "printf", "no newline at the end")
    screen = _screen(out)
    assert code == 0 and "no newline at the end" in screen, screen
    summary = next(line for line in screen if "printf exited 0" in line)
    assert summary.startswith("shmdoctor run: ")
    code, out = _in_a_terminal(*RUN, "--", "echo", "a whole line")
    screen = _screen(out)
    assert screen[screen.index("a whole line") + 1].startswith("shmdoctor run: echo exited 0"), screen  # no gap


@pytest.mark.parametrize("where", ["pipe", "file"])
def test_through_a_pipe_or_into_a_file_the_summary_starts_a_line_of_its_own(where, tmp_path):
    log = tmp_path / "log"
    if where == "pipe":  # the command's stderr without a newline at its end
        err = subprocess.run([*RUN, "--", "sh", "-c", "printf abc >&2"], capture_output=True, timeout=WAIT).stderr
    else:  # > log 2>&1: its stdout without a newline
        with open(log, "wb") as f:
            subprocess.run([*RUN, "--", "printf", "abc"], stdout=f, stderr=subprocess.STDOUT, timeout=WAIT)
        err = log.read_bytes()
    assert b"\nabc\nshmdoctor run: " in err, err
    whole = subprocess.run([*RUN, "--", "sh", "-c", "echo abc >&2"], capture_output=True, timeout=WAIT).stderr
    assert b"\nabc\nshmdoctor run: " in whole, whole  # no empty line after a whole one


# /dev/shm of its own: a tmpfs mounted in a mount namespace of its own, so that every byte is the test's.
def _own_shm(options: str, *run: str) -> subprocess.CompletedProcess:
    script = f'mount -t tmpfs -o {options} sdt-shm /dev/shm && exec "$@"'
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *run],
        capture_output=True,
        cwd=REPO,
        timeout=WAIT * 2,
    )


LEAVES = "head -c 2097152 /dev/zero > /dev/shm/job-scratch.bin; printf x > /dev/shm/job.lock; exit 1"


def test_after_a_death_the_facts_are_read_again_and_the_files_it_left_are_named(tmp_path):
    report = tmp_path / "run.json"
    proc = _own_shm("size=16m", *RUN, "--report", str(report), "--", "sh", "-c", LEAVES)
    assert proc.returncode == 1, proc.stderr
    assert b"/dev/shm 16 MiB, 0 B used" in proc.stderr  # the opening facts: before it ran
    doc = validate(json.loads(report.read_text()))
    assert doc["explanation"]["shm"]["used_bytes"] == 2 * 2**20 + 4096  # after: what it left
    assert doc["left_files"] == {"count": 2, "bytes": 2 * 2**20 + 4096, "names": ["job-scratch.bin", "job.lock"]}
    assert b"2 other file(s) appeared in /dev/shm while it ran" in proc.stderr
    assert b"'job-scratch.bin'" in proc.stderr


def test_a_read_only_dev_shm_is_said_in_the_opening_facts():
    proc = _own_shm("ro,size=16m", *RUN, "--", "true")
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(b"shmdoctor run: /dev/shm 16 MiB") and b"READ-ONLY" in first, first
    writable = _own_shm("size=16m", *RUN, "--", "true")
    assert b"READ-ONLY" not in writable.stderr


def test_ctrl_c_at_a_terminal_kills_run_too_so_that_a_shell_loop_stops():
    """The terminal sends SIGINT to its foreground group, the command's: run does not forward it, it sees the
    command die of it, and dies of it in turn (a shell loop around it stops); bash tells that from an exit 130."""
    pid, master = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [*RUN, "--", sys.executable, "-c", WAITS])
    out, end = b"", time.monotonic() + WAIT
    while not out.strip().splitlines()[1:] and select.select([master], [], [], max(0, end - time.monotonic()))[0]:
        out += os.read(master, 4096)  # the facts line, then the command's pid: it waits for its signal
    os.write(master, b"\x03")
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], WAIT)[0]:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
        os.close(master)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT, (status, out)
