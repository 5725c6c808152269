"""Capacity arithmetic on hand-worked Facts: what a loader can take today, and the sizes a fix asks for."""

from __future__ import annotations

import pytest

from shmdoctor import capacity
from shmdoctor.model import Facts, Ipc, Memory, Shm, ShmSource, Target
from shmdoctor.sizes import GiB, MiB


def facts(
    size: int | None = 64 * MiB,
    used: int | None = 0,
    limit: int | None = None,
    in_use: int | None = None,
    source: ShmSource = "docker-shm",
) -> Facts:
    free = None if size is None or used is None else size - used
    return Facts(
        target=Target("container", "t"),
        shm=Shm(True, size, used, free, source),
        ipc=Ipc("private"),
        memory=Memory(limit, in_use),
    )


@pytest.mark.parametrize(
    "given, free, room, available, binds",
    [
        (facts(), 64 * MiB, None, 64 * MiB, False),  # no memory limit: /dev/shm alone
        (facts(used=16 * MiB), 48 * MiB, None, 48 * MiB, False),
        (facts(size=2 * GiB, used=None), 2 * GiB, None, 2 * GiB, False),  # use unknown (inspect, a file): its size
        # 1 GiB limit, 100 MiB in use, 256 MiB for the training process: 668 MiB of room, under 2 GiB of /dev/shm
        (facts(size=2 * GiB, limit=GiB, in_use=100 * MiB), 2 * GiB, 668 * MiB, 668 * MiB, True),
        (facts(limit=GiB, in_use=0), 64 * MiB, 768 * MiB, 64 * MiB, False),  # the limit has room: /dev/shm binds
        (facts(limit=200 * MiB, in_use=0), 64 * MiB, 0, 0, True),  # the process alone outgrows the limit
    ],
)
def test_what_a_loader_can_take_today(given, free, room, available, binds):
    assert capacity.shm_free(given) == free
    assert capacity.memory_room(given) == room
    assert capacity.available(given) == available
    assert capacity.memory_binds(given) is binds


def test_no_shm_is_nothing_free_and_each_rank_reserves_its_process():
    none = Facts(Target("container", "t"), Shm(False, None, None, None, "none"), Ipc("none"), Memory(GiB, 0))
    assert capacity.shm_free(none) == 0 and capacity.available(none) == 0
    assert capacity.memory_room(facts(limit=GiB, in_use=0), ranks=2) == 512 * MiB


def test_sizes_asked_for_keep_the_margin_and_round_to_what_people_type():
    # 900 MiB + 25% = 1125 MiB -> 1.5 GiB; what others use there counts, unless the fix leaves the host's behind
    assert capacity.shm_size_for(900 * MiB, facts()) == 1536 * MiB
    assert capacity.shm_size_for(900 * MiB, facts(used=400 * MiB, size=GiB)) == 2 * GiB  # 1300 MiB + 25%
    assert capacity.shm_size_for(900 * MiB, facts(used=400 * MiB, size=GiB, source="host")) == 1536 * MiB
    # 100 MiB in use + 256 MiB process + 900 MiB × 1.25 = 1481 MiB -> 1.5 GiB
    assert capacity.memory_for(900 * MiB, facts(limit=GiB, in_use=100 * MiB)) == 1536 * MiB


def test_memory_asked_for_holds_every_ranks_process_and_reads_unknown_use_as_none():
    # 4 ranks × 256 MiB + 1 GiB × 1.25 = 2304 MiB -> 3 GiB (one rank's process alone would be 1536 MiB)
    assert capacity.memory_for(GiB, facts(limit=GiB, in_use=0), ranks=4) == 3 * GiB
    # use unknown: 0 B. 256 MiB + (1 GiB + 1 B) × 1.25 = 1536 MiB + 1 B, past 1.5 GiB by one byte -> 2 GiB
    assert capacity.memory_for(GiB + 1, facts(limit=GiB, in_use=None)) == 2 * GiB


def test_the_memory_limit_binds_once_a_second_ranks_process_takes_its_room():
    # 1 GiB limit beside 700 MiB of /dev/shm: one rank leaves 768 MiB (the shm binds), two leave 512 MiB (the limit)
    given = facts(size=700 * MiB, limit=GiB, in_use=0)
    assert capacity.memory_binds(given) is False
    assert capacity.memory_binds(given, ranks=2) is True


# int() drops the fraction: (n + others) × 1.25 up to 1536 MiB (1,610,612,736 B) asks 1.5 GiB, one byte past it 2 GiB
AT_STEP, PAST_STEP = 1_288_490_189, 1_288_490_190  # × 1.25 = 1,610,612,736.25 and 1,610,612,737.5


@pytest.mark.parametrize(
    "given",
    [facts(used=None), facts(used=0, source="host"), facts(used=400 * MiB, size=GiB, source="host-ipc")],
    ids=["use unknown", "the host's, empty", "the host's, in use"],
)
def test_a_size_asked_for_counts_no_use_it_cannot_see_or_leaves_behind(given):
    assert capacity.shm_size_for(AT_STEP, given) == 1536 * MiB
    assert capacity.shm_size_for(PAST_STEP, given) == 2 * GiB


def test_memory_asked_for_exactly_on_a_step_stays_on_it():
    # use unknown: 0 B. 256 MiB + 1 GiB × 1.25 = 1536 MiB exactly -> 1.5 GiB
    assert capacity.memory_for(GiB, facts(limit=GiB, in_use=None)) == 1536 * MiB


def test_at_a_tie_the_shm_binds():
    # 1 GiB limit, 256 MiB for the process: 768 MiB of room beside 768 MiB of /dev/shm: the fix grows /dev/shm
    assert capacity.memory_binds(facts(size=768 * MiB, limit=GiB, in_use=0)) is False
