"""Reading logs: grep and the Python loop hand over the same candidate lines, numbered alike; overlong lines and
hostile bytes are bounded."""

import io
import os
import shutil

import pytest

from shmdoctor.diagnose.scan import MAX_LINE, Prefilter, Scanner, anchors
from shmdoctor.errors import UsageError
from shmdoctor.probe import logs

LOG = (
    b"epoch 1 step 10\n"
    b"\xff\xfe binary junk \x00\n"
    b"RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.\n"
    + b"x"
    * (3 * MAX_LINE)
    + b" Killed\n"  # past the first MAX_LINE bytes of its line: not looked at
    b"progress 10%\rprogress 20%\rERROR: Unexpected bus error encountered in worker. This might be caused by "
    b"insufficient shared memory (shm).\n"
    b"Killed"  # no newline at the end
)
KEYS = Prefilter(anchors())


def _python(data: bytes):
    return list(logs._python_lines(io.BytesIO(data), KEYS))


def test_python_loop_numbers_and_bounds_lines():
    got = [(n, line[:40]) for n, line, _ in _python(LOG)]
    assert [n for n, _ in got] == [3, 4, 5, 6]  # the candidates, and the line after each (a wrapped message's rest)
    assert all(len(line) <= MAX_LINE for _, line, _ in _python(LOG))


@pytest.mark.skipif(shutil.which("grep") is None, reason="no grep on this machine")
def test_grep_and_the_python_loop_find_the_same(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(LOG)

    def diagnosed(lines):
        scanner = Scanner()
        for n, line, repeats in lines:
            scanner.line(n, line, repeats)
        return scanner.diagnoses()

    with open(path, "rb") as f:
        by_grep = diagnosed(logs._grep_lines(f, KEYS.exact, shutil.which("grep"), shutil.which("uniq")))
    assert by_grep == diagnosed(_python(LOG))
    assert [d.line for d in by_grep] == [5, 6]  # the bus error at 3 is superseded by the worker's own line


def test_scan_of_a_log_file(tmp_path):
    path = tmp_path / "train.log"
    path.write_bytes(LOG)
    with logs.open_log(str(path)) as f:
        found = logs.scan(f).diagnoses()
    assert [(d.signature, d.line) for d in found] == [("torch-worker-bus-error", 5), ("shell-killed", 6)]


def test_open_log_refuses_what_is_not_a_readable_file(tmp_path):
    with pytest.raises(UsageError, match="a directory is not a regular file"):
        logs.open_log(str(tmp_path))
    with pytest.raises(UsageError, match="cannot read"):
        logs.open_log(str(tmp_path / "missing.log"))
    os.mkfifo(tmp_path / "fifo.log")  # no writer: a blocking open would wait forever
    with pytest.raises(UsageError, match="a FIFO is not a regular file"):
        logs.open_log(str(tmp_path / "fifo.log"))
    with pytest.raises(UsageError, match="a device is not a regular file"):
        logs.open_log("/dev/zero")  # would be read without end


@pytest.mark.parametrize("chunk", [7, MAX_LINE - 1, MAX_LINE, 2**20])
def test_the_copy_fed_to_grep_cuts_each_line_and_keeps_its_number(monkeypatch, chunk):
    monkeypatch.setattr(logs, "CHUNK", chunk)
    lines = [b"a" * MAX_LINE, b"b" * (MAX_LINE + 1), b"", b"c" * (5 * MAX_LINE), b"short", b"d" * (MAX_LINE - 1)]
    out = io.BytesIO()
    logs._cut_lines(io.BytesIO(b"\n".join(lines) + b"\n" + b"e" * (2 * MAX_LINE)), out)  # the last: no newline
    assert out.getvalue().split(b"\n") == [line[:MAX_LINE] for line in lines] + [b"e" * MAX_LINE]
