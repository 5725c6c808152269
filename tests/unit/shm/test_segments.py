"""Which files of a tmpfs are known segments, and which of those are leaked: the pure part of clean."""

from __future__ import annotations

import os

import pytest

from shmdoctor.model import SHM
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.shm.segments import File, creator_pid, plan_removal, recognise


@pytest.mark.parametrize(
    "name, kind",
    [
        ("torch_123_456789_0", "PyTorch"),
        ("nccl-AbC123", "NCCL"),
        ("sem.mp-k2j3h4_x", "Python multiprocessing semaphore"),
        ("psm_1a2b3c", None),  # multiprocessing.shared_memory: may outlive every handle by design
        ("sem.postgres", None),
        ("torch_", None),
        ("my_torch_1_2", None),
        ("nccl", None),
        ("random.bin", None),
        # files of a project, which the old prefix match took for segments
        ("torch_utils.py", None),
        ("torch_1_2_3.py", None),
        ("torch_1_2", None),
        ("torch_1_2_3\n", None),
        ("torch_١_2_3", None),  # a digit, but not an ASCII one
        ("nccl-tests.log", None),
        ("nccl-AbC12", None),
        ("nccl-AbC1234", None),
        ("sem.mp-k2j3h4", None),
        ("sem.mp-K2J3H4_X", None),
    ],
)
def test_recognise(name, kind):
    assert recognise(name) == kind


def test_recognise_multiprocessings_own_semaphores():
    import multiprocessing

    # Under spawn a SemLock stays named in /dev/shm (sem.mp-XXXXXXXX) until its resource tracker unlinks it.
    lock = multiprocessing.get_context("spawn").Lock()
    name = "sem." + lock._semlock.name.lstrip("/")
    assert os.path.exists(os.path.join(SHM, name))
    assert recognise(name) == "Python multiprocessing semaphore"


def _holders(held: dict[int, list[int]], pids=()) -> Holders:
    """{pid: [inodes]} -> Holders, as a scan would have found them."""
    return Holders(
        tuple(
            Holder(pid, "python train.py", tuple(Segment(i, f"seg{i}", 4096, True) for i in inodes))
            for pid, inodes in held.items()
        ),
        pids=frozenset(pids),
    )


@pytest.mark.parametrize(
    "name, held, alive, visible, expect",
    [
        ("torch_99_1_0", {}, (), True, "leaked"),
        ("torch_99_1_0", {500: [1]}, (500,), True, "kept"),  # mapped by a live process
        ("torch_99_1_0", {}, (99,), True, "kept"),  # its creator is alive: a file_system batch in flight
        ("torch_99_1_0", {}, (), False, "kept"),  # creators may live where this PID namespace cannot look
        ("nccl-x1y2z3", {}, (), False, "leaked"),  # no creator in the name: holding alone decides
        ("nccl-x1y2z3", {7: [1]}, (7,), True, "kept"),
        ("sem.mp-abc_1234", {}, (), True, "leaked"),
        ("psm_abc", {}, (), True, "unrecognised"),
        ("core.1234", {}, (), True, "unrecognised"),
    ],
)
def test_plan_removal(name, held, alive, visible, expect):
    plan = plan_removal([File(name, 1, 8192)], _holders(held, alive), creators_visible=visible)
    got = {"leaked": plan.leaked, "kept": plan.kept, "unrecognised": plan.unrecognised}
    assert [x.name for x in got[expect]] == [name]
    assert sum(len(v) for v in got.values()) == 1


def test_creator_pid():
    assert creator_pid("torch_4242_17_3") == 4242
    assert creator_pid("nccl-123") is None
