"""A /dev/shm that refuses a segment (not writable for the user, mounted read-only) is no usable /dev/shm wherever the
log is judged, and each refusal gets its own fix: a size would not help. The texts were made here (docker run as uid
1000 with --tmpfs /dev/shm:rw,mode=755, or with --tmpfs /dev/shm:ro; python 3.11, torch 2.13), as
tests/integration/docker/test_explain.py makes them again."""

import pytest

from shmdoctor.diagnose import judge, scan_text
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.sizes import GiB

SEMLOCK = """Traceback (most recent call last):
  File "/usr/local/lib/python3.11/multiprocessing/synchronize.py", line 57, in __init__
    sl = self._semlock = _multiprocessing.SemLock(
                         ^^^^^^^^^^^^^^^^^^^^^^^^^
"""
DENIED = [
    "RuntimeError: unable to open shared memory object </torch_1_1497696650_0> in read-write mode: "
    "Permission denied (13)",
    SEMLOCK + "PermissionError: [Errno 13] Permission denied",
    "gpu1:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied",  # NVIDIA/nccl#328
]
READ_ONLY = [
    "RuntimeError: unable to open shared memory object </torch_1_3442566712_0> in read-write mode: "
    "Read-only file system (30)",
    SEMLOCK + "OSError: [Errno 30] Read-only file system",
]
CHMOD = "chmod 1777 /dev/shm"


def big_writable_shm() -> Facts:
    """Where the log is read: a 64 GiB /dev/shm that works (the refusal happened elsewhere)."""
    shm = Shm(True, 64 * GiB, 0, 64 * GiB, "system")
    return Facts(Target("local", "laptop"), shm, Ipc("host"), Memory(None, 1 * GiB), runtime="none")


def judged(text: str):
    ex = judge(scan_text(text).diagnoses(), big_writable_shm())
    return ex.diagnoses, ex.report.findings[0].fixes


@pytest.mark.parametrize("text", DENIED)
def test_a_dev_shm_not_writable_for_the_user_is_made_writable(text):
    diagnoses, fixes = judged(text)
    assert [d.cause for d in diagnoses] == ["shm-missing"]
    assert [f.shell for f in fixes] == [CHMOD]


@pytest.mark.parametrize("text", READ_ONLY)
def test_a_read_only_dev_shm_is_mounted_read_write_not_chmodded(text):
    diagnoses, fixes = judged(text)
    assert [d.cause for d in diagnoses] == ["shm-missing"]
    assert len(fixes) == 1 and fixes[0].shell is None
    assert fixes[0].summary.startswith("mount /dev/shm read-write")


def test_a_missing_torch_segment_where_dev_shm_works_is_another_file():
    """The ambiguous ENOENT (torch-shm-missing) is what the facts overrule; the refusals above are not."""
    text = "FileNotFoundError: [Errno 2] No such file or directory: '/dev/shm/torch_1_2_3'"
    diagnoses, _ = judged(text)
    assert [d.cause for d in diagnoses] == ["not-shm"]
