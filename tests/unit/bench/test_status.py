"""How a config's end is told: the real texts PyTorch prints (FACTS.md, the seed article) and exit statuses."""

import signal

import pytest

from shmdoctor.bench.status import classify_end

WORKER = "Caught RuntimeError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n  ...\n"
ENOSPC = WORKER + (
    "RuntimeError: unable to allocate shared memory(shm) for file </torch_5170_2925381151_1>: "
    "No space left on device (28)"
)
SEED = WORKER + (
    "RuntimeError: unable to allocate shared memory(shm) for file </torch_826048_2310082876_0>: "
    "Resource temporarily unavailable (11)"
)
BUS_LOG = (
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
)
BUS_MAIN = (
    "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that "
    "dataloader's workers are out of shared memory. Please try to raise your shared memory limit."
)
WORKER_OOM = "RuntimeError: DataLoader worker (pid 77) is killed by signal: Killed. "
NO_SHM = "FileNotFoundError: [Errno 2] No such file or directory"
ANCDATA = "RuntimeError: received 0 items of ancdata"


@pytest.mark.parametrize(
    "error, log, rc, present, status, says",
    [
        (ENOSPC, "", 1, True, "shm-exhausted", "No space left on device (28)"),
        (SEED, "", 1, True, "shm-exhausted", "Resource temporarily unavailable (11)"),
        ("", BUS_LOG, 1, True, "shm-exhausted", "Unexpected bus error"),
        (BUS_MAIN, "", 1, True, "shm-exhausted", "killed by signal: Bus error"),
        (WORKER_OOM, "", 1, True, "shm-exhausted", "is killed by signal: Killed"),
        (NO_SHM, "", 1, False, "shm-exhausted", "there is no /dev/shm"),
        ("", "", -signal.SIGKILL, True, "shm-exhausted", "SIGKILL"),
        ("", "", -signal.SIGBUS, True, "shm-exhausted", "SIGBUS"),
        # not shared memory
        (NO_SHM, "", 1, True, "error", "FileNotFoundError"),
        (ANCDATA, "", 1, True, "error", "received 0 items of ancdata"),
        ("OSError: [Errno 28] No space left on device: '/data/cache.bin'", "", 1, True, "error", "/data/cache.bin"),
        ("ValueError: bad sample", "", 1, True, "error", "ValueError: bad sample"),
        ("", "Segmentation fault", -signal.SIGSEGV, True, "error", "SIGSEGV"),
        ("", "", 0, True, "ok", ""),
    ],
)
def test_classify(error, log, rc, present, status, says):
    got, message = classify_end(error, log, rc, shm_present=present)
    assert got == status
    assert says in message


def test_a_worker_the_oom_killer_ended_is_told_by_the_cgroup_counter():
    exited = "RuntimeError: DataLoader worker (pid(s) 17) exited unexpectedly"  # the real words for it
    assert classify_end(exited, "", 1)[0] == "error"
    status, message = classify_end(exited, "", 1, oom_killed=True)
    assert status == "shm-exhausted" and "OOM killer" in message and "exited unexpectedly" in message


def test_a_timeout_is_an_error_unless_shm_ran_out_first():
    assert classify_end("", "", -signal.SIGKILL, timed_out=True)[0] == "error"
    assert classify_end(ENOSPC, "", -signal.SIGKILL, timed_out=True)[0] == "shm-exhausted"


@pytest.mark.parametrize(
    "error, rc, oom_killed",
    [
        ("", -signal.SIGKILL, False),  # the host's OOM killer took the run
        (WORKER_OOM, 1, False),  # ... or one of its workers
        ("RuntimeError: DataLoader worker (pid(s) 17) exited unexpectedly", 1, True),  # a limit's kill, no shm used
    ],
)
def test_a_kill_for_memory_is_memory_where_no_limit_counts_the_runs_shm(error, rc, oom_killed):
    # issue 11: 23 GB of batches with num_workers=0 and no memory limit set off the host's OOM killer; that is not
    # /dev/shm running out, and nothing about /dev/shm may be said or fixed
    status, message = classify_end(error, "", rc, oom_killed=oom_killed, shm_charged=False)
    assert status == "out-of-memory" and "not /dev/shm" in message
    assert classify_end(error, "", rc, oom_killed=oom_killed, shm_charged=True)[0] == "shm-exhausted"
