"""How the judge reads an exit and what run measured, and weighs an ambiguous text (a bus error, a SIGKILL, a missing
file) against the facts, at each boundary: 16 GiB free, NCCL's 2 GiB, a quarter of the memory limit's room, a peak
2 MiB from full, a need equal to what is free. Sizes are written here; texts are quoted from the corpus
(tests/data/explain/cases.yaml, harvested.yaml) with their source."""

import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest

from shmdoctor.diagnose import SIGNATURES, Exit, Measured, judge, scan_text
from shmdoctor.diagnose.judge import Job
from shmdoctor.loader import loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.sizes import GiB, MiB

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "explain" / "captured"
BUS = "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error."  # pytorch#5040
NCCL = "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)"
ENGINE = "the engine (State.ExitCode)"


def place(size: int | None, used: int = 0, limit: int | None = None) -> Facts:
    """A machine whose /dev/shm is `size` with `used` of it taken, under a memory limit or none (1 GiB in use)."""
    free = None if size is None else size - used
    return Facts(Target("local", "gpu-node"), Shm(True, size, used, free, "system"), Ipc("host"), Memory(limit, GiB))


def weighed(text, facts: Facts, **kw) -> list[tuple[str, str, str]]:
    diagnoses = scan_text(text).diagnoses() if isinstance(text, str) else text
    return [(d.signature, d.cause, d.reason) for d in judge(diagnoses, facts, **kw).diagnoses]


@pytest.mark.parametrize(
    ("code", "signal"),
    [(None, None), (0, None), (1, None), (100, None), (128, None), (129, 1), (135, 7), (137, 9), (159, 31)]
    + [(160, None), (200, None)],
)
def test_an_exit_code_is_a_signal_from_129_to_159_as_a_shell_reports_128_plus_n(code, signal):
    assert Exit(code).signal == signal


def test_an_exit_of_137_alone_is_a_sigkill_and_one_the_engine_could_not_code_is_nothing():
    """run's child killed (137), nothing in its log: a SIGKILL, weighed against a 700 MiB limit over 2 GiB of shm."""
    (d,) = judge((), place(2 * GiB, limit=700 * MiB), ended=Exit(137, None, "the child")).diagnoses
    assert (d.signature, d.cause, d.excerpt) == ("exit-sigkill", "memory-limit", "the child: 137 (SIGKILL)")
    assert judge((), place(2 * GiB), ended=Exit(None, False, ENGINE)).diagnoses == ()


@pytest.mark.parametrize(
    ("peak", "reason"),
    [
        (62 * MiB, "/dev/shm reached 62 MiB of 64 MiB, 3.2 s before the end"),  # 2 MiB from full: full
        (62 * MiB - 1, "/dev/shm is 64 MiB; the samples saw at most 62 MiB: a fill and a death between two samples"),
    ],
)
def test_a_peak_within_2_mib_of_the_size_filled_it(peak, reason):
    measured = Measured(peak_bytes=peak, size_bytes=64 * MiB, peak_t=1.0, elapsed=4.2)
    ((_, cause, said),) = weighed(BUS, place(64 * MiB), measured=measured)
    assert cause == "shm-space" and said.startswith(reason)


def test_what_run_leaves_out_of_a_measurement_is_nothing_in_use_before_and_no_memory_peak():
    measured = Measured(peak_bytes=MiB, size_bytes=64 * MiB, peak_t=1.0, elapsed=2.0)
    assert (measured.start_bytes, measured.memory_peak) == (0, None)


def test_the_judges_documents_are_frozen():
    ex = judge(scan_text(BUS).diagnoses(), place(64 * MiB), ended=Exit(135), measured=Measured(MiB, MiB, 1.0, 2.0))
    for document, field in ((ex.exit, "code"), (ex.measured, "peak_bytes"), (ex, "source"), (Job(), "ranks")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(document, field, None)


def test_a_kill_the_engine_saw_decides_only_by_what_it_says_of_the_oom_killer():
    # OOMKilled=true: memory-limit, the engine's word; OOMKilled unknown (run's child): the facts decide
    (_, cause, reason), _ = weighed("Killed", place(64 * MiB, limit=16 * GiB), ended=Exit(137, True, ENGINE))
    assert (cause, reason) == ("memory-limit", "the engine says the container was OOM-killed (State.OOMKilled=true)")
    ((_, cause, reason),) = weighed("Killed", place(64 * MiB), ended=Exit(137, None, ENGINE))
    assert cause == "not-shm" and reason.startswith("no memory limit applies here")


@pytest.mark.parametrize(
    ("shm", "measured", "reason"),
    [
        (64 * MiB, None, "/dev/shm is 64 MiB, too little to take the memory limit (16 GiB) over"),
        (None, Measured(64 * MiB, None, 1.0, 2.0), "/dev/shm peaked at 64 MiB, too little to take the memory limit"),
    ],
)
def test_a_kill_under_a_big_limit_with_a_small_dev_shm_says_how_it_knows_the_size(shm, measured, reason):
    ((_, cause, said),) = weighed("Killed", place(shm, limit=16 * GiB), measured=measured)
    assert cause == "not-shm" and said.startswith(reason)


@pytest.mark.parametrize(
    ("limit", "shm", "cause"),
    [
        # the limit less a process's 256 MiB (the 1 GiB in use now is not counted): 400 MiB, a quarter 100 MiB
        (656 * MiB, 100 * MiB - 1, "not-shm"),
        (656 * MiB, 100 * MiB, "memory-limit"),
        (656 * MiB + 3, 100 * MiB, "memory-limit"),  # a quarter of 400 MiB + 3 B, floored: still 100 MiB
        (656 * MiB + 4, 100 * MiB, "not-shm"),
    ],
)
def test_a_sigkill_is_dev_shm_from_a_quarter_of_what_the_limit_leaves_it(limit, shm, cause):
    assert [c for _, c, _ in weighed("Killed", place(shm, limit=limit))] == [cause]


def test_a_missing_file_is_dev_shm_only_where_there_is_none_or_it_cannot_be_written():
    """The seed loader under docker run --ipc=none, captured here: FileNotFoundError from SemLock."""
    log = (CAPTURED / "ipc-none-semlock.log").read_text()
    here = place(64 * MiB)
    absent = replace(here, shm=Shm(False, None, None, None, "none"))
    read_only = replace(here, shm=replace(here.shm, read_only=True))
    assert [c for _, c, _ in weighed(log, absent) + weighed(log, read_only)] == ["shm-missing", "shm-missing"]
    ((_, cause, reason),) = weighed(log, here)
    assert cause == "not-shm" and reason.startswith("/dev/shm exists here (64 MiB)")


@pytest.mark.parametrize(("size", "cause"), [(2 * GiB - 1, "ambiguous"), (2 * GiB, "not-shm"), (64 * GiB, "not-shm")])
def test_ncclss_system_error_is_not_dev_shm_from_2_gib(size, cause):
    assert [c for _, c, _ in weighed(NCCL, place(size))] == [cause]


@pytest.mark.parametrize(
    "text",
    [
        "(RayWorker pid=3554640) *** SIGBUS received at time=1692931519 on cpu 133 ***",  # vllm-project/vllm#859
        "Bus error (core dumped)",  # a shell's
    ],
)
def test_another_consumers_bus_error_in_4_gib_is_still_dev_shm(text):
    """NCCL's 2 GiB bound is NCCL's: Ray's store and a bare bus error are judged by the 16 GiB free."""
    assert [c for _, c, _ in weighed(text, place(4 * GiB))] == ["shm-space"]


@pytest.mark.parametrize(("used", "cause"), [(124 * MiB, "not-shm"), (124 * MiB + 1, "shm-space")])
def test_a_loaders_need_equal_to_what_is_free_fits(used, cause):
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))  # (2 × 4 + 1) × 100 MiB
    ((_, said, reason),) = weighed(BUS, place(GiB, used=used), need=need)
    assert said == cause
    if cause == "not-shm":
        assert reason.startswith("the loader needs 900 MiB and /dev/shm has 900 MiB free here")


@pytest.mark.parametrize(("used", "cause"), [(0, "not-shm"), (1, "shm-space")])
def test_a_bus_error_with_16_gib_free_is_not_dev_shm_and_one_byte_less_is(used, cause):
    assert [c for _, c, _ in weighed(BUS, place(16 * GiB, used=used))] == [cause]


@pytest.mark.parametrize(
    ("text", "other"),
    [
        (BUS, "a bus error then comes from another mapped file (LMDB, np.memmap, a file on a network volume)"),
        (  # tengshaofeng/ResidualAttentionNetwork-pytorch#2
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
            "(shm).",
            "a bus error then comes from another mapped file",
        ),
        (  # THU-DA-6D-Pose-Group/GDR-Net#16
            "RuntimeError: DataLoader worker (pid(s) 3216) exited unexpectedly",
            "a worker gone without a word is then the OOM killer (dmesg says) or a crash in the worker",
        ),
    ],
)
def test_with_plenty_free_each_text_says_what_else_it_is(text, other):
    ((_, cause, reason),) = weighed(text, place(64 * GiB))
    assert cause == "not-shm" and reason.startswith(f"/dev/shm has 64 GiB free here: {other}")


def test_the_texts_the_facts_weigh_come_with_three_causes_and_no_line_before_changes_them():
    """The judge weighs an ambiguous text as memory-limit, shm-missing or else shm-space, the cause it came with."""
    ambiguous = [s for s in SIGNATURES if s.ambiguous]
    assert {s.cause for s in ambiguous} == {"memory-limit", "shm-missing", "shm-space"}
    assert [s.id for s in ambiguous if s.cause == "shm-missing"] == ["torch-shm-missing"]
    assert all(s.not_after is None for s in ambiguous)  # scan's not-shm is for unambiguous lines only
