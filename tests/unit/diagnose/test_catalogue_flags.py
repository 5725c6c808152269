"""A text that alone does not prove /dev/shm (a bus error, a SIGKILL, an exit status: the catalogue's `ambiguous`) is
weighed against the place it ran in: the same real text is a shared-memory finding (exit 1) where /dev/shm is small
or a memory limit counts it, and "not shared memory" (exit 0) where the place rules it out. Each text is quoted from
its thread or captured here; the places are the ones the threads tell (tests.helpers.place)."""

import pytest

from shmdoctor.diagnose import Exit, judge, scan_text
from tests.helpers import place

# 64 MiB of /dev/shm (Docker's default), no memory limit: a bus error there is the full /dev/shm
SMALL: dict = {}
# 64 GiB of /dev/shm and no loader given: a bus error there comes from another mapped file
ROOMY = {"shm": "64g"}
# a 700 MiB memory limit and a 2 GiB /dev/shm whose pages count toward it: a SIGKILL there is /dev/shm's doing
LIMITED = {"shm": "2g", "memory": "700m"}

BUS_ERRORS = [
    # PaddlePaddle/Paddle#25211
    "It may be caused by insufficient shared storage space. This problem usually occurs when using docker as a "
    "development environment.",
    # vllm-project/vllm#859
    "(RayWorker pid=3554640) *** SIGBUS received at time=1692931519 on cpu 133 ***",
    # ray-project/ray#4989
    "(pid=4496) Fatal Python error: Bus error",
    # bash's report of a child killed by SIGBUS
    "bash: line 1:    42 Bus error               (core dumped) python train.py",
    # docker compose, a SIGBUS
    "loader-1 exited with code 135",
    # hpcaitech/ColossalAI#3556
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 1 (pid: 5621) of binary: "
    "/usr/bin/python3.10",
    # deepspeedai/DeepSpeed#4002
    '[BUG] Have "exits with return code = -7" without any error message',
    # huggingface/transformers-bloom-inference#16
    'running error with "Bus error: nonexistent physical address"',
    # captured here: tests/data/explain/captured/spawn-sigbus-shm-64m.log, its last line
    "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGBUS",
]

KILLS = [
    # the pytorch#1355 family
    "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.",
    # docker compose
    "trainer-1 exited with code 137",
    # OpenBMB/MiniCPM-V#770
    "torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: -9) local_rank: 0 (pid: 1322) of "
    "binary: /root/miniconda3/bin/python",
    # deepspeedai/DeepSpeed#4239
    "[QUESTION]exits with return code = -9, but there seems to be enough memory",
    # lyu-yx/ACUMEN#4
    "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL",
    # bmaltais/kohya_ss#1065
    "died with <Signals.SIGKILL: 9>.",
]


def verdict(text: str, where: dict, ended: Exit | None = None) -> tuple[list[str], int]:
    ex = judge(scan_text(text).diagnoses(), place(where), ended=ended)
    return [d.cause for d in ex.diagnoses], ex.exit_code


@pytest.mark.parametrize("text", BUS_ERRORS)
def test_a_bus_error_is_dev_shm_where_it_is_small_and_not_where_64_gib_are_free(text):
    assert verdict(text, SMALL) == (["shm-space"], 1)
    assert verdict(text, ROOMY) == (["not-shm"], 0)


@pytest.mark.parametrize("text", KILLS)
def test_a_sigkill_is_dev_shm_under_a_memory_limit_that_counts_it_and_not_without_a_limit(text):
    assert verdict(text, LIMITED) == (["memory-limit"], 1)
    assert verdict(text, SMALL) == (["not-shm"], 0)


def test_ncclss_failed_system_call_is_ambiguous_in_a_small_dev_shm_here_and_not_shm_in_2_gib():
    """Issue 35 item 6: a bare NCCL system error is not blamed on a small /dev/shm where it is read; with 2 GiB there
    it is another call."""
    text = "NCCL 2.7.8 error, ncclSystemError: System call (socket, malloc, munmap, etc) failed."  # pytorch#54822
    assert verdict(text, SMALL) == (["ambiguous"], 0)
    assert verdict(text, {"shm": "2g"}) == (["not-shm"], 0)


@pytest.mark.parametrize(
    "code, where, found",
    [
        (135, SMALL, (["shm-space"], 1)),  # a SIGBUS `run` saw, no text
        (135, ROOMY, (["not-shm"], 0)),
        (137, LIMITED, (["memory-limit"], 1)),  # a SIGKILL
        (137, SMALL, (["not-shm"], 0)),
    ],
)
def test_an_exit_status_alone_is_weighed_as_a_text_saying_it_is(code, where, found):
    assert verdict("", where, Exit(code, None, "the child")) == found
