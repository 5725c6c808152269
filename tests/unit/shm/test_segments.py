"""Which files of a tmpfs are known segments, and which of those are leaked: the pure part of clean."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from shmdoctor.model import SHM
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.shm.segments import (
    KNOWN,
    Entry,
    File,
    by_consumer,
    consumer,
    creator_pid,
    freed,
    plan_removal,
    recognise,
)


@pytest.mark.parametrize(
    "name, kind",
    [
        ("torch_123_456789_0", "PyTorch"),
        ("nccl-AbC123", "NCCL"),
        ("sem.mp-k2j3h4_x", "Python multiprocessing semaphore"),
        # names made for real: SharedMemory(create=True), libc mkstemp("plasmaXXXXXX"), str(uuid4()), SGLang's
        ("psm_837bb3ad", "Python shared_memory (vLLM)"),
        ("plasmaTvCHF2", "Ray object store"),
        ("triton_python_backend_shm_region_3e0a540a-9144-43d7-b529-ed3f504778b5", "Triton python backend"),
        ("sgl_shm_mq_15788_29045c08", "SGLang"),
        ("psm_1a2b3c", None),  # too short for SharedMemory's token_hex(4)
        ("psm_837BB3AD", None),  # token_hex is lower case
        ("psm_837bb3ad.lock", None),
        ("plasma", None),
        ("plasma_store.log", None),
        ("plasmaTvCHF", None),
        ("triton_python_backend_shm_region_", None),
        ("triton_python_backend_shm_region_1", None),
        ("triton_python_backend_shm_region_3e0a540a9144443d7b529ed3f504778b5", None),
        ("sgl_shm_mq_15788", None),
        ("sgl_shm_mq__29045c08", None),
        ("sgl_shm_mq_15788_29045c0", None),
        ("sgl_shm_mq_abc_29045c08", None),
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
    assert creator_pid("sgl_shm_mq_15788_29045c08") == 15788
    assert creator_pid("psm_837bb3ad") is None
    assert creator_pid("nccl-123") is None


def test_names_without_a_creator_are_kept_with_why_even_unheld():
    # psm_, plasma and Triton's regions may outlive their holders by design, and no pid in the name proves a death.
    names = ["psm_837bb3ad", "plasmaTvCHF2", "triton_python_backend_shm_region_3e0a540a-9144-43d7-b529-ed3f504778b5"]
    files = [File(n, i, 4096) for i, n in enumerate(names, 1)]
    plan = plan_removal(files, Holders((), pids=frozenset({1})))
    assert plan.leaked == ()
    kept = {e.name: e.why for e in plan.kept}
    assert kept[names[0]] == (
        "Python shared_memory outlives its handles by design and its name carries no creator: nothing proves it "
        "leaked (remove it yourself once no program of yours attaches to it by name)"
    )
    assert (
        kept[names[1]]
        == "Ray unlinks its object store at once and its name carries no creator: nothing proves it leaked"
    )
    assert kept[names[2]] == (
        "its name carries no creator, and a Triton server may restart a stub that attaches to it again: nothing "
        "proves it leaked (it goes when its server stops)"
    )


def test_sglang_queue_is_leaked_only_once_its_creator_is_gone():
    files = [File("sgl_shm_mq_15788_29045c08", 1, 4096), File("sgl_shm_mq_15799_0a1b2c3d", 2, 4096)]
    plan = plan_removal(files, Holders((), pids=frozenset({15788})))
    assert [e.name for e in plan.leaked] == ["sgl_shm_mq_15799_0a1b2c3d"]
    assert [(e.name, e.why) for e in plan.kept] == [("sgl_shm_mq_15788_29045c08", "its creator, pid 15788, is alive")]
    hidden = plan_removal(files, Holders(()), creators_visible=False)
    assert hidden.leaked == () and len(hidden.kept) == 2


def test_use_per_consumer_counts_listed_files_and_unlinked_holds_once():
    files = [File("psm_837bb3ad", 1, 8192), File("notes.txt", 2, 4096), File("sem.mp-k2j3h4_x", 3, 4096)]
    held = Holders(
        (
            Holder(10, "raylet", (Segment(5, "plasmaTvCHF2", 1 << 20, True),)),
            Holder(
                11, "python serve.py", (Segment(1, "psm_837bb3ad", 8192, False), Segment(6, "nccl-AbC123", 4096, True))
            ),
        )
    )
    assert by_consumer(files, held) == {"ray": 1 << 20, "vllm": 8192, "dataloader": 4096, "nccl": 4096, "other": 4096}
    assert consumer("torch_1_2_3") == "dataloader" and consumer("torch_utils.py") == "other"


def test_the_clean_schema_names_every_kind():
    schema = json.loads((Path(__file__).parents[3] / "shmdoctor/render/schemas/clean.json").read_text())
    assert schema["$defs"]["entry"]["properties"]["kind"]["enum"] == [k.kind for k in KNOWN]


def test_removing_names_frees_a_file_once_and_only_when_every_name_of_it_goes():
    page = 4096
    two = [Entry("torch_1_1_0", 7, 2 * page, "PyTorch", links=2), Entry("torch_1_1_1", 7, 2 * page, "PyTorch", links=2)]
    assert freed(tuple(two)) == 2 * page  # both names of a file of two (st_nlink 2): its pages, once
    assert freed(tuple(two[:1])) == 0  # one of its two names: the other keeps its pages
    elsewhere = tuple(replace(e, links=3) for e in two)  # a third name outside the folder
    assert freed(elsewhere) == 0
    assert freed((Entry("nccl-Ab12Cd", 8, page, "NCCL"),)) == page  # one name of one


def test_a_consumers_use_is_the_sum_of_its_files_biggest_first_then_by_name():
    page = 4096
    files = [File("nccl-Ab12Cd", 1, page), File("torch_9_1_0", 2, page), File("torch_9_1_1", 3, page)]
    files.append(File("sgl_shm_mq_9_0123abcd", 4, 2 * page))
    assert list(by_consumer(files, Holders(())).items()) == [("dataloader", 2 * page), ("sglang", 2 * page),
                                                              ("nccl", page)]  # fmt: skip
    assert list(by_consumer(files[:2], Holders(())).items()) == [("dataloader", page), ("nccl", page)]


def test_a_plans_leaked_bytes_are_what_removing_its_leaked_names_frees():
    sem = File("sem.mp-abcd1234", 1, 8192)  # a semaphore nobody maps: removable, no creator to ask
    plan = plan_removal([sem, File("notes.txt", 2, 4096)], Holders(()))
    assert [e.name for e in plan.leaked] == ["sem.mp-abcd1234"] and plan.leaked_bytes == 8192
