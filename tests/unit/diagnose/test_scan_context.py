"""The lines around a match that change what it means, each at the edge of its reach: NCCL's cudaHostRegister failure
up to 4 lines above a creation failure of the same process (nccl#1518); a SemLock frame up to 4 lines above a bare
ENOSPC (CPython) or below it (billiard prints the error first); a message wrapped onto the next line, and only the
next line handed over, and only from the last redraw of a progress bar to the first of the next line."""

import pytest

from shmdoctor.diagnose import scan_text
from shmdoctor.diagnose.scan import Scanner

# nccl#1518 (one process: 'host:pid:tid [dev]')
DENIED = "{p}node1:55:60 [{r}] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'"
CREATE = (
    "{p}node1:55:60 [{r}] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment "
    "/dev/shm/nccl-x (size 9637888)"
)
# CPython's SemLock (python/cpython#93253): the frame, then the bare error
FRAME = "    sl = self._semlock = _multiprocessing.SemLock("
OSERROR = "OSError: [Errno 28] No space left on device"
# billiard (celery/billiard#293): the error printed first, its traceback after (the frames above SemLock's left out)
BILLIARD = [
    OSERROR,
    '  File "billiard/synchronize.py", line 182, in __init__',
    "    SemLock.__init__(self, SEMAPHORE, 1, 1, ctx=ctx)",
    '  File "billiard/synchronize.py", line 72, in __init__',
    "    kind, value, maxvalue, self._make_name(), unlink_now,",
]
# CPython's SemLock._rebuild in a spawned child (screetsec/Sudomy#126)
GONE = "FileNotFoundError: [Errno 2] No such file or directory"
REBUILD = "    self._semlock = _multiprocessing.SemLock._rebuild(*state)"
# vLLM's check (FACTS.md), cut mid-word by a terminal
VLLM_HEAD = "RuntimeError: Insufficient space in /dev/shm for psm_1: 161.0 MiB requ"
VLLM_REST = "ired, 60.2 MiB free."


def _found(log):
    return [(d.signature, d.cause, d.line, d.count) for d in scan_text(log).diagnoses()]


@pytest.mark.parametrize(("apart", "cause"), [(1, "not-shm"), (4, "not-shm"), (5, "shm-space")])
def test_a_registration_failure_covers_the_creation_failure_up_to_4_lines_below(apart, cause):
    log = [DENIED.format(p="", r=1), *["x"] * (apart - 1), CREATE.format(p="", r=1)]
    assert _found("\n".join(log)) == [("nccl-shm-create", cause, 1 + apart, 1)]


def test_a_registration_failure_covers_its_own_process_whatever_the_timestamps():
    log = [DENIED.format(p="[2025-01-30 10:00:01] ", r=1), "", CREATE.format(p="[2025-01-30 10:00:02] ", r=1)]
    assert _found("\n".join(log)) == [("nccl-shm-create", "not-shm", 3, 1)]


@pytest.mark.parametrize(("denied", "created"), [(0, 1), (1, 0)])
def test_a_registration_failure_of_one_device_does_not_cover_another(denied, created):
    log = [DENIED.format(p="", r=denied), "", CREATE.format(p="", r=created)]
    assert _found("\n".join(log)) == [("nccl-shm-create", "shm-space", 3, 1)]


# (the first line, lines apart): 4 lines apart at most; the pairs also tell the line numbers' difference from any
# other arithmetic of them (3 and 4, 10 and 14, 2 and 7, 10 and 15)
REACH = [(3, 1, True), (10, 4, True), (2, 5, False), (10, 5, False)]


@pytest.mark.parametrize(("first", "apart", "found"), REACH)
def test_a_bare_enospc_is_a_semaphores_up_to_4_lines_below_a_semlock_frame(first, apart, found):
    """Further apart, the known text does not match: the general reader reads the same block (test_reader.py)."""
    log = [*["x"] * (first - 1), FRAME, *["  ..."] * (apart - 1), OSERROR]
    sig = "python-semlock-enospc" if found else "read-shm-enospc"
    want = [(sig, "shm-space", first + apart, 1)]
    assert _found("\n".join(log)) == want


@pytest.mark.parametrize(("first", "apart", "found"), REACH)
def test_a_bare_enospc_is_a_semaphores_up_to_4_lines_above_a_semlock_frame(first, apart, found):
    log = [*["x"] * (first - 1), OSERROR, *["  ..."] * (apart - 1), FRAME]
    sig = "python-semlock-enospc" if found else "read-shm-enospc"
    want = [(sig, "shm-space", first, 1)]
    assert _found("\n".join(log)) == want


def test_billiards_error_above_its_traceback_is_found_at_its_line_once_for_its_two_semlock_frames():
    log = ["celery worker starting", *BILLIARD, FRAME]
    assert _found("\n".join(log)) == [("python-semlock-enospc", "shm-space", 2, 1)]


def test_a_match_waits_for_its_own_context_line_while_another_signatures_comes():
    # the FileNotFoundError waits for SemLock._rebuild; the SemLock frame below it releases the ENOSPC only
    log = [GONE, OSERROR, FRAME, REBUILD]
    assert _found("\n".join(log)) == [
        ("python-semlock-gone", "remove-ipc", 1, 1),
        ("python-semlock-enospc", "shm-space", 2, 1),
    ]


def test_a_disk_full_long_before_does_not_hide_a_semaphores_enospc():
    # 100 bare ENOSPCs of a full disk, none under or over a SemLock frame, are forgotten 4 lines on
    log = [*[OSERROR] * 100, *["x"] * 20, *BILLIARD]
    assert _found("\n".join(log)) == [("python-semlock-enospc", "shm-space", 121, 1)]


def test_a_flood_of_bare_errors_on_one_line_holds_64_for_the_frame_below():
    # 100 redraws of one line, each a bare ENOSPC: 64 wait for a SemLock frame, the rest are dropped
    log = ["\r".join([OSERROR] * 100), FRAME]
    assert _found("\n".join(log)) == [("python-semlock-enospc", "shm-space", 1, 64)]


def test_a_message_wrapped_far_down_a_long_log_is_read_with_its_next_line():
    log = [*["step"] * 299, VLLM_HEAD, VLLM_REST]
    (d,) = scan_text("\n".join(log)).diagnoses()
    assert (d.signature, d.line, d.bytes_needed) == ("vllm-shm-insufficient", 300, 161 * 2**20)


@pytest.mark.parametrize(("rest_at", "found"), [(8, True), (9, False), (12, False)])
def test_a_head_is_read_with_the_line_numbered_after_it_only(rest_at, found):
    # a reader hands over candidate lines with their numbers: the rest of a message is the very next line
    scanner = Scanner()
    scanner.line(7, VLLM_HEAD)
    scanner.line(rest_at, VLLM_REST)
    assert [(d.signature, d.line) for d in scanner.diagnoses()] == ([("vllm-shm-insufficient", 7)] if found else [])


@pytest.mark.parametrize(
    ("head", "rest", "found"),
    [
        ("epoch 1:  10%\r" + VLLM_HEAD, VLLM_REST + "\repoch 1:  20%", True),  # the last redraw, then the first
        (VLLM_HEAD + "\repoch 1:  10%", VLLM_REST, False),  # a redraw came over the head
        (VLLM_HEAD, "epoch 1:  10%\r" + VLLM_REST, False),  # a redraw came before the rest
    ],
    ids=["last-then-first", "head-redrawn-over", "rest-after-a-redraw"],
)
def test_a_wrapped_message_goes_on_from_the_last_redraw_of_a_line_to_the_first_of_the_next(head, rest, found):
    got = [(d.signature, d.line) for d in scan_text(head + "\n" + rest).diagnoses()]
    assert got == ([("vllm-shm-insufficient", 1)] if found else [])
