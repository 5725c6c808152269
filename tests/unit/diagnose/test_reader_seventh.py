"""Kinds of evidence the seventh pass taught, each from its consumer's own words (not the harvest's texts), with the
look-alike each must not take for /dev/shm."""

import pytest

from shmdoctor.diagnose import scan_text


def _said(log: str) -> list[tuple[str, str, str]]:
    return [(d.signature, d.cause, d.consumer) for d in scan_text(log).diagnoses()]


# SGLang's engine.py _scheduler_died_error: 'Rank {rank} scheduler died during initialization (exit code: {code}).
# If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.' (sgl-project/sglang): its own word names it
SGLANG_DIED = "RuntimeError: Rank 0 scheduler died during initialization (exit code: {})"


@pytest.mark.parametrize(
    "log",
    [
        "Fatal Python error: Bus error\n" + SGLANG_DIED.format(-7),
        "Fatal Python error: Bus error\n\nThread 0x00007f (most recent call first):\n  <no Python frame>\n"
        + SGLANG_DIED.format(-7)
        + ". If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
        "[2026-01-02 03:04:05] Received sigquit from a child process. It usually means the child failed.\n"
        "Fatal Python error: Bus error\nRuntimeError: Rank 3 scheduler died during initialization (exit code: -7)",
    ],
    ids=["bare", "with-its-hint", "rank-3"],
)
def test_a_bus_error_of_an_sglang_scheduler_dying_is_sglangs(log):
    said = _said(log)
    assert said and {(cause, consumer) for _, cause, consumer in said} == {("shm-space", "sglang")}


def test_an_sglang_scheduler_dying_of_another_signal_is_not_dev_shm():
    # an OOM kill (-9), a segfault (-11), a SIGQUIT (-3) of the same words: none is a bus error
    for code, signal in ((-9, ""), (-11, "Fatal Python error: Segmentation fault\n"), (-3, "")):
        causes = {cause for _, cause, _ in _said(signal + SGLANG_DIED.format(code))}
        assert not causes & {"shm-space", "shm-missing", "shm-leak"}, code
    assert _said("INFO scheduler died during initialization of the cron daemon; restarting") == []


# vLLM's CPU offloading (vllm-project/vllm#52496, as its CI logged it): what it has of the size asked, then that size
@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: Insufficient space in /dev/shm:\n4095/4096 MiB required, 1405 MiB free",
        "RuntimeError: Insufficient space in /dev/shm: 4095/4096 MiB required, 1405 MiB free",
    ],
    ids=["wrapped", "one-line"],
)
def test_vllms_offloading_says_the_size_it_asks_after_what_it_has(log):
    (d,) = scan_text(log).diagnoses()
    assert (d.signature, d.consumer, d.bytes_needed) == ("vllm-shm-insufficient", "vllm", 4096 * 2**20)


def test_anothers_insufficient_space_in_dev_shm_is_not_vllms():
    # a RAM-disk backend's own check (its words: 'need {size}MB, available {free}MB'): not vLLM's ring buffer
    said = _said("Insufficient space in /dev/shm: need 100MB, available 50.0MB")
    assert all(consumer != "vllm" for _, _, consumer in said)
    # and a disk's, in the same form
    assert _said("Insufficient space in /data: 4095/4096 MiB required, 1405 MiB free") == []


@pytest.mark.parametrize(
    "name", ["/torch_4242_1879048192_3", "/torch_<pid>_<id>_<n>", "/torch_<pid>_1879048192_<n>"], ids=str
)
def test_a_torch_segment_gone_before_its_owner_unlinks_it_is_removed_under_it(name):
    # THRefcountedMapAllocator's close: 'could not unlink the shared memory file ' << name << ' : ' << strerror
    log = f"RuntimeError: could not unlink the shared memory file {name} : No such file or directory (2)"
    assert _said(log) == [("torch-shm-unlink", "remove-ipc", "dataloader")]


def test_anothers_segment_not_unlinked_is_not_torchs():
    assert _said("could not unlink the shared memory file /myapp_<pid> : No such file or directory (2)") == []
