"""Each rule that compares sizes, one byte either side of its boundary, with the ranks that multiply the memory a
job needs. Every expected number is worked here from the formulas (FACTS.md), never read from the code."""

from __future__ import annotations

import pytest

from shmdoctor.loader import LoaderSpec
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.rules import judge
from shmdoctor.workload import Consumers, Workload

MiB = 2**20
RESERVE = 256 * MiB  # capacity.PROCESS_RESERVE, per rank: the training process beside /dev/shm
# batch_size 1 × 4096 B (one page), 1 worker, prefetch 2, no pin_memory: (2·1 + 1) × 4096 = 12,288 B a rank
NEED = 12_288


def need(ranks: int = 1):
    return LoaderSpec(batch_size=1, num_workers=1, sample_bytes=4096, ranks=ranks).requirement()


def facts(free: int, *, limit: int | None = None, used: int = 0, kind: str = "container") -> Facts:
    return Facts(Target(kind, "t"), Shm(True, free, 0, free, "docker-shm"), Ipc("private"), Memory(limit, used))


def ids(f: Facts, ranks: int = 1) -> set[str]:
    return {x.id for x in judge(f, need(ranks)).findings}


def test_the_need_is_what_the_formula_says():
    assert need().bytes == NEED and need(2).bytes == 2 * NEED and need(2).ranks == 2


@pytest.mark.parametrize("free, fails", [(NEED + 1, False), (NEED, False), (NEED - 1, True)])
def test_shm_too_small_fires_only_below_the_need(free, fails):
    assert ("shm-too-small" in ids(facts(free))) is fails


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_shm_too_small_counts_every_ranks_loader(ranks):
    assert "shm-too-small" not in ids(facts(ranks * NEED), ranks)
    assert "shm-too-small" in ids(facts(ranks * NEED - 1), ranks)


# thin-headroom: more than 80% (1/1.25) of what is available, and no more than all of it
@pytest.mark.parametrize(
    "free, thin",
    [(NEED - 1, False), (NEED, True), (15_359, True), (15_361, False)],  # 12,288 / 0.8 = 15,360
)
def test_thin_headroom_between_80_percent_and_all(free, thin):
    assert ("thin-headroom" in ids(facts(free))) is thin


@pytest.mark.parametrize("ranks", [1, 2, 4])
@pytest.mark.parametrize("used", [0, 100 * MiB])
def test_memory_limit_fires_only_past_the_room_each_rank_leaves(ranks, used):
    """room = limit − used − 256 MiB a rank; the need is the loaders' of every rank."""
    roomy = 64 * 2**30  # /dev/shm itself never the one short
    exact = ranks * NEED + used + ranks * RESERVE
    assert "memory-limit" not in ids(facts(roomy, limit=exact, used=used), ranks)
    assert "memory-limit" in ids(facts(roomy, limit=exact - 1, used=used), ranks)


def test_memory_limit_with_two_ranks_is_not_judged_as_one():
    # 256 MiB + 24,576 B: one rank's process and two ranks' loaders fit; two ranks' processes do not
    limit = RESERVE + 2 * NEED
    assert "memory-limit" not in ids(facts(64 * 2**30, limit=limit), 1)
    assert "memory-limit" in ids(facts(64 * 2**30, limit=limit), 2)


@pytest.mark.parametrize("size, over", [(MiB, False), (MiB + 1, True)])
def test_shm_over_memory_only_past_what_the_limit_leaves(size, over):
    # no loader given, on this machine (it may run one): 257 MiB limit, 256 MiB for the process: 1 MiB of room
    f = facts(size, limit=RESERVE + MiB, kind="local")
    assert ("shm-over-memory" in {x.id for x in judge(f, None).findings}) is over


@pytest.mark.parametrize("free, full", [(MiB, False), (MiB - 1, True)])
def test_shm_full_below_one_twentieth_free(free, full):
    size = 20 * MiB  # a twentieth: 1 MiB
    f = Facts(
        Target("container", "t"), Shm(True, size, size - free, free, "docker-shm"), Ipc("private"), Memory(None, None)
    )
    assert ("shm-full" in {x.id for x in judge(f, None).findings}) is full


NCCL_8 = 60 * 9_650_176 + 8 * 34_213_888  # 8 GPUs over SHM: 60 connections and a proxy pool a rank (FACTS.md)
SEED = 900 * MiB  # (2·4 + 1) × 100 MiB


@pytest.mark.parametrize("free, warned", [(SEED + NCCL_8, False), (SEED + NCCL_8 - 1, True)])
def test_nccl_fallback_warns_only_when_loader_and_fallback_outgrow_what_is_free(free, warned):
    spec = LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB)
    job = Workload(spec, Consumers(gpus=8)).requirement(facts(free))
    assert job.nccl_fallback == NCCL_8 and job.bytes == SEED  # P2P assumed: nothing of NCCL's in /dev/shm
    assert ("nccl-shm-fallback" in {x.id for x in judge(facts(free), job).findings}) is warned


# Ray keeps its store in /dev/shm only where more is free than the store (services.py: shm_avail > object_store_memory)
@pytest.mark.parametrize("free, warned", [(SEED + 2 * 2**30 + 1, False), (SEED + 2 * 2**30, True)])
def test_ray_store_falls_back_unless_the_loader_leaves_more_than_it(free, warned):
    spec = LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB)
    job = Workload(spec, Consumers(ray_object_store=2 * 2**30)).requirement(facts(free))
    assert job.term("ray").bytes == 2 * 2**30
    assert ("ray-object-store-fallback" in {x.id for x in judge(facts(free), job).findings}) is warned
