"""A run of one line is read once and counted (issue 38: 3 million of one error took 162 s): on logs made of the
lines that change a match's meaning (a context line before or after, a message wrapped over two lines, a 'limits:'
and its 'memory:', a pod's log prefix, a progress bar's \\r, colour codes), each repeated, the diagnoses and what
the log says of the job are those of the same log read line by line, through the Python loop and through grep."""

from __future__ import annotations

import io
import shutil
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from shmdoctor.diagnose.scan import Prefilter, Scanner, anchors
from shmdoctor.probe import logs

LINES = [
    "epoch 1 step 10 loss=0.3",
    "RuntimeError: unable to write to file </torch_31911_952036340_6686>: No space left on device (28)",
    "OSError: [Errno 28] No space left on device",  # a SemLock's, only after its traceback frame
    '  File "/usr/lib/python3.11/multiprocessing/synchronize.py", line 57, in __init__ SemLock(',
    "[1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'",
    "[1] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x1 (size 9637888)",
    "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only",
    "67108864 bytes available. You can increase /dev/shm size by passing '--shm-size=5.04gb' to 'docker run'",
    "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.",
    "    limits:",
    "      memory: 2Gi",
    "shm   64M   0  64M   0% /dev/shm",
    "2024-05-01T10:00:00.123456789Z stderr F RuntimeError: DataLoader worker (pid 9) is killed by signal: Bus error.",
    "progress 10%\rERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
    "memory (shm).",
    "\x1b[31mKilled\x1b[0m",
    "",
]
LOGS = st.lists(st.tuples(st.sampled_from(LINES), st.integers(min_value=1, max_value=7)), min_size=1, max_size=12)


def read(lines) -> tuple:
    scanner = Scanner()
    for number, line, repeats in lines:
        scanner.line(number, line, repeats)
    return scanner.diagnoses(), scanner.clues


def one_by_one(data: bytes) -> tuple:
    """The log's candidate lines and the line after each, each read alone: what the scanner did before runs."""
    keys = [k.encode() for k in anchors()]
    lines, after = [], False
    for number, raw in enumerate(data.split(b"\n")[:-1], 1):
        candidate = any(k in raw for k in keys)
        if candidate or after:
            lines.append((number, raw + b"\n", 1))
        after = candidate
    return read(lines)


@settings(max_examples=50, deadline=None)
@given(LOGS)
def test_a_run_read_once_says_what_its_lines_read_one_by_one_say(log):
    data = "".join((line + "\n") * times for line, times in log).encode()
    want = one_by_one(data)
    assert read(logs._python_lines(io.BytesIO(data), Prefilter(anchors()))) == want
    if shutil.which("grep"):
        with tempfile.TemporaryFile() as f:
            f.write(data)
            f.seek(0)
            grep = logs._grep_lines(f, [k.encode() for k in anchors()], shutil.which("grep"), shutil.which("uniq"))
            assert read(grep) == want


def test_a_million_of_one_error_is_one_run_counted_a_million_times():
    line = LINES[1] + "\n"
    data = b"epoch 1\n" + line.encode() * 1_000_000 + b"done\n"
    runs = list(logs._python_lines(io.BytesIO(data), Prefilter(anchors())))
    assert [(n, r) for n, _, r in runs] == [(2, 1_000_000), (1_000_002, 1)]  # the run, then the line after it
    (d,) = read(runs)[0]
    assert (d.line, d.count) == (2, 1_000_000)
