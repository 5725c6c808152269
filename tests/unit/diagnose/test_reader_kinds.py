"""The general reader's kinds of evidence the sixth pass taught (each written from its source's own words, not from
the harvest's texts): a security module refusing a file in /dev/shm, Python's ENOSYS with no call named, a consumer
whose files are /dev/shm (pandarallel), PostgreSQL's main segment in its own words; and the corpus scorer reading a
harvest's labels in the schema's values."""

import pytest

from benchmarks.explain_corpus import in_schema, scored
from shmdoctor.diagnose import scan_text


def _said(log: str) -> list[tuple[str, str, str]]:
    return [(d.signature, d.cause, d.consumer) for d in scan_text(log).diagnoses()]


DENIED = {
    # AppArmor's audit line as the kernel logs it (type=1400), a snap's Chromium
    "AppArmor": 'audit: type=1400 audit(1700000000.123:42): apparmor="DENIED" operation="mknod" '
    'profile="snap.app.app" name="/dev/shm/.org.chromium.Chromium.a1B2c3" pid=4242 comm="chrome" '
    'requested_mask="c" denied_mask="c" fsuid=1000 ouid=1000',
    # SELinux's AVC record on a tmpfs file in /dev/shm
    "SELinux": 'type=AVC msg=audit(1700000000.1:7): avc:  denied  { create } for pid=42 comm="python3" '
    'name="psm_1a2b3c4d" scontext=system_u:system_r:container_t:s0 tcontext=system_u:object_r:tmpfs_t:s0 '
    "tclass=file permissive=0\nthe segment was for /dev/shm",
}


@pytest.mark.parametrize("log", DENIED.values(), ids=DENIED.keys())
def test_a_security_modules_refusal_in_dev_shm_is_a_permission(log):
    ((signature, cause, _),) = _said(log)
    assert (signature, cause) == ("read-shm-denied", "shm-missing")


def test_a_refusal_of_a_file_elsewhere_or_with_no_shared_memory_is_not_read():
    elsewhere = 'apparmor="DENIED" operation="open" name="/home/u/.config/app/prefs" comm="app"\nsee /dev/shm'
    assert _said(elsewhere) == []
    assert _said('apparmor="DENIED" operation="connect" comm="app"') == []


PYTHON_ENOSYS = {
    "AWS Lambda's Python runtime's words": "module initialization error: [Errno 38] Function not implemented",
    "its error and type, as Lambda logs them": "[Errno 38] Function not implemented: OSError",
    "an application's own wording": "An exception occurred: [Errno 38] Function not implemented",
    "Python 2's tuple": "Unrecoverable error: OSError(38, 'Function not implemented')",
}


@pytest.mark.parametrize("log", PYTHON_ENOSYS.values(), ids=PYTHON_ENOSYS.keys())
def test_pythons_enosys_with_no_call_named_is_semlocks_without_dev_shm(log):
    """Every real text of [Errno 38] in the corpora is SemLock's where no /dev/shm is mounted (AWS Lambda)."""
    (d,) = scan_text(log).diagnoses()
    assert (d.signature, d.cause, d.consumer) == ("read-shm-enosys", "shm-missing", "multiprocessing")
    assert d.evidence.startswith("Python's errno 38 with no call named")


def test_pythons_enosys_naming_its_call_or_file_is_that_calls():
    assert _said("OSError: [Errno 38] Function not implemented: 'inotify_init'") == []
    symlink = "    os.symlink('lib', lib64_link)\nOSError: [Errno 38] Function not implemented"
    assert _said(symlink) == []
    assert _said("write: ENOSYS (Function not implemented)") == []  # strace's, not Python's: no call named is none


def test_pandarallel_passes_data_through_dev_shm():
    """pandarallel's use_memory_fs (its default where /dev/shm is): a worker's ENOSPC in its frames is /dev/shm's."""
    log = (
        '  File "/usr/lib/python3/dist-packages/multiprocessing/pool.py", line 125, in worker\n'
        '  File "/usr/lib/python3/dist-packages/pandarallel/core.py", line 158, in __call__\n'
        "OSError: [Errno 28] No space left on device"
    )
    assert _said(log) == [("read-shm-enospc", "shm-space", "pandarallel")]


def test_postgresqls_anonymous_main_segment_is_not_dev_shm():
    """pg_shmem.c CreateAnonymousSegment's words: the main segment (memory, huge pages), never /dev/shm."""
    log = (
        "FATAL:  could not map anonymous shared memory: Cannot allocate memory\n"
        "HINT:  This error usually means that PostgreSQL's request for a shared memory segment exceeded available "
        "memory, swap space, or huge pages."
    )
    assert _said(log) == []


def test_the_scorer_reads_a_harvests_labels_in_the_schemas_values():
    case = {"source": "s", "text": "t", "cause": "shm-permission", "consumer": "electron"}
    assert (in_schema(case)["cause"], in_schema(case)["consumer"]) == (["shm-missing"], ["chromium"])
    assert in_schema({**case, "cause": "leaked", "consumer": "ros2"})["consumer"] == ["unknown"]
    assert in_schema({**case, "cause": "leaked"})["cause"] == ["shm-leak"]
    assert in_schema({**case, "consumer": "oracle"})["consumer"] == ["oracle"]  # a value of the schema stays
    assert not scored({**case, "cause": "unknown"}) and scored(case)


# Frigate's docs ('Calculating required shm-size'): each camera's frames are kept in /dev/shm; faulthandler's dump of
# its threads names its own modules beside a queue feeder's multiprocessing frames
FRIGATE = (
    "Fatal Python error: Bus error\n"
    "Thread 0x00007f43d176a700 (most recent call first):\n"
    '  File "/usr/lib/python3.9/multiprocessing/queues.py", line 227 in _feed\n'
    "Current thread 0x00007f43c9f67700 (most recent call first):\n"
    '  File "/opt/frigate/frigate/object_processing.py", line 88 in run\n'
)


def test_frigates_frames_prove_a_bus_error_and_name_no_pool_its_consumer():
    assert _said(FRIGATE) == [("read-shm-bus-error", "shm-space", "unknown")]


def test_frigates_frames_beside_a_crash_or_with_no_failure_are_not_read():
    assert _said(FRIGATE.replace("Bus error", "Segmentation fault")) == []
    assert _said('  File "/opt/frigate/frigate/video.py", line 115 in capture_frames\nframe dropped') == []
    # a bus error in multiprocessing's frames alone names no consumer of /dev/shm: nothing proves it
    assert _said(FRIGATE.replace("/opt/frigate/frigate/object_processing.py", "/srv/app/main.py")) == []
