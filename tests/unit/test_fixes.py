"""What each fix sets, said in the target's own form, with the expected values by the arithmetic in the comments:
a /dev/shm is the need + 25% rounded up to the 1-1.5-2-3-4-6-8 series (64m, 96m, 128m, 192m, 256m, 384m, 512m, 768m,
1g, 1536m, ...), a memory limit that series' size of what is in use + 256 MiB a training process + the need + 25%;
the loader settings that fit today, each knob turned down alone: (prefetch·workers + 1 unless pinned) × batch × ranks
within 80% of the free /dev/shm."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shmdoctor import fixes
from shmdoctor.loader import loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Need, Requirement, Shm, Target
from shmdoctor.render import forms
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Consumers, Workload

# docker run --memory=512m, a /dev/shm of 64 MiB from inspect (use unknown, so none counted)
DOCKER = Facts(
    Target("container", "train"),
    Shm.unmeasured(64 * MiB, "docker-shm", ""),
    Ipc("private"),
    Memory(512 * MiB, 0),
    "docker",
)
NEED = 560 * MiB  # + 25% = 700 MiB: a /dev/shm of 768 MiB; + 256 MiB for one process = 956 MiB: a memory limit of 1g


def said(fixes_: tuple, facts: Facts = DOCKER) -> list[tuple[str, ...]]:
    return [forms.statements(fix, facts) for fix in fixes_]


def test_a_larger_shm_with_the_memory_to_hold_it_and_the_hosts_as_the_alternative():
    grow, host = fixes.grow_shm(NEED, DOCKER)
    assert grow.summary == "give /dev/shm 768 MiB: 560 MiB needed + 25%, and memory to hold it"
    assert said((grow, host)) == [("docker run --shm-size=768m --memory=1g ...",), ("docker run --ipc=host ...",)]
    assert host.caveat == fixes.IPC_HOST_CAVEAT


def test_each_ranks_process_takes_its_own_memory_beside_the_shm():
    # 700 MiB + 2 × 256 MiB = 1212 MiB: 1536m; the /dev/shm is the need's alone, whatever the ranks
    assert said(fixes.grow_shm(NEED, DOCKER, ranks=2)[:1]) == [("docker run --shm-size=768m --memory=1536m ...",)]
    assert said((fixes.grow_memory(NEED, DOCKER, ranks=2),)) == [("docker run --memory=1536m ...",)]


@pytest.mark.parametrize("limit", [1 * GiB, 2 * GiB])
def test_a_memory_limit_that_holds_it_already_is_left_as_it_is(limit):
    # 1g is exactly what it would ask for: no change; 2g is more: never lowered
    (grow, _) = fixes.grow_shm(NEED, replace(DOCKER, memory=Memory(limit, 0)))
    assert grow.memory_bytes is None and grow.summary == "give /dev/shm 768 MiB: 560 MiB needed + 25%"
    assert said((grow,), replace(DOCKER, memory=Memory(limit, 0))) == [("docker run --shm-size=768m ...",)]


def test_a_memory_limit_for_one_process_by_default():
    fix = fixes.grow_memory(NEED, DOCKER)
    assert said((fix,)) == [("docker run --memory=1g ...",)]
    assert fix.summary.startswith("memory limit of 1 GiB: ")


def test_the_ipc_owner_is_named_only_where_there_is_one():
    owned = replace(DOCKER, ipc=Ipc("container", owner="loader-host"))
    assert fixes.grow_shm(NEED, owned)[0].summary.startswith("on loader-host, the IPC owner: give /dev/shm 768 MiB: ")
    unnamed = replace(DOCKER, ipc=Ipc("container"))  # an owner the probe could not name
    assert fixes.grow_shm(NEED, unnamed)[0].summary.startswith("give /dev/shm 768 MiB: ")


PODMAN = replace(DOCKER, runtime="podman", shm=Shm.unmeasured(62 * MiB, "podman-shm", ""))


def test_a_pods_member_is_sized_in_its_pod_and_gets_no_host_alternative():
    quadlet = replace(PODMAN, target=Target("service", "train"), ipc=Ipc("container", owner="train.pod"))
    (grow,) = fixes.grow_shm(NEED, quadlet)
    assert said((grow,), quadlet) == [
        (
            "# in train.pod's [Pod] section (Podman 5.4+; 5.0 to 5.3: PodmanArgs=--shm-size=768m)",
            "ShmSize=768m",
            "PodmanArgs=--memory=1g",
        )
    ]


@pytest.mark.parametrize(
    "runtime, ipc",
    [
        ("podman", Ipc("private")),
        ("podman", Ipc("container", owner="loader-host")),  # another container's IPC, not a pod's
        ("docker", Ipc("container", owner="train.pod")),  # a container that Docker happens to call *.pod
    ],
)
def test_outside_a_pod_the_hosts_shm_is_the_alternative(runtime, ipc):
    facts = replace(PODMAN, runtime=runtime, ipc=ipc)
    assert said(fixes.grow_shm(NEED, facts)[1:], facts) == [(f"{runtime} run --ipc=host ...",)]


def test_a_read_only_tmpfs_is_written_again_read_write_at_its_size():
    tmpfs = replace(DOCKER, shm=Shm.unmeasured(512 * MiB, "tmpfs", "", read_only=True))
    assert said((fixes.read_write(tmpfs),), tmpfs) == [("docker run --tmpfs /dev/shm:size=512m ...",)]


@pytest.mark.parametrize("source", ["docker-shm", "unknown"])
def test_a_read_only_shm_of_the_engine_or_an_unknown_volume_only_drops_its_ro(source):
    facts = replace(DOCKER, shm=Shm.unmeasured(512 * MiB, source, "", read_only=True))
    fix = fixes.read_write(facts)
    assert not fix.sets and forms.line(fix, facts) == fix.summary
    assert fix.summary == "mount /dev/shm read-write: drop ro / read_only / readOnly from the mount at /dev/shm"


def test_nccl_over_shm_offers_its_own_ways_out_and_over_p2p_none():
    over_shm = Workload(consumers=Consumers(gpus=2, nccl="shm")).requirement(DOCKER)
    assert said(fixes.consumer_fixes(over_shm, DOCKER)) == [
        ("docker run -e NCCL_SHM_DISABLE=1 ...",),
        ("docker run -e NCCL_BUFFSIZE=1048576 ...",),
    ]
    # two nodes, P2P assumed between a node's GPUs: /dev/shm holds the proxy pools (2 × 32.6 MiB) and no SHM
    # connection, whose fallback nccl-shm-fallback warns of: neither way out would shrink what the need counts
    over_p2p = Workload(consumers=Consumers(gpus=2, nodes=2)).requirement(DOCKER)
    assert over_p2p.bytes > 64 * MiB and over_p2p.nccl_fallback > 0 and fixes.consumer_fixes(over_p2p, DOCKER) == ()


@pytest.mark.parametrize(
    "nccl, env",
    [(None, (("NCCL_SHM_DISABLE", "1"),)), ("off", ()), ("shm", (("NCCL_SHM_DISABLE", "1"),))],
)
def test_nccl_with_shm_off_already_is_not_told_to_turn_it_off(nccl, env):
    # sockets: /dev/shm holds the 2 proxy pools (68 MiB, more than the 64 MiB there is), which no NCCL variable shrinks
    facts = replace(DOCKER, nccl_env=env)
    need = Workload(consumers=Consumers(gpus=2, nccl=nccl)).requirement(facts)
    assert need.bytes == 2 * 34_213_888 and fixes.consumer_fixes(need, facts) == ()


def _fits(shm: int | None, others: int = 0, **loader) -> list[dict[str, int]]:
    """The settings that fit a free /dev/shm of `shm` (None: not known), beside `others` bytes NCCL takes."""
    facts = Facts(Target("local", "t"), Shm(True, shm, 0, shm, "docker-shm"), Ipc("private"), Memory(None, 0))
    need = requirement(loader_config(**loader))
    if others:
        need = replace(need, bytes=need.bytes + others, breakdown=(*need.breakdown, Need("nccl", others, "given")))
    return [fix.loader for fix in fixes.fit_today(need, facts)]  # type: ignore[misc]


def test_each_knob_down_to_the_largest_that_fits():
    # 64 MiB: 53,687,091 B usable, room for 53,687,091 // 4 MiB - 1 = 11 batches beside the held one.
    # workers: 2·5 + 1 = 11 batches (44 MiB) fit, 2·6 + 1 = 13 do not; prefetch 1: 8 + 1 = 9 fit;
    # batch_size: 17 batches of 3 MiB (51 MiB) fit in 51.2 MiB, of 4 MiB do not.
    loader = dict(batch_size=4, num_workers=8, prefetch_factor=2, sample_bytes=MiB)
    assert _fits(64 * MiB, **loader) == [{"num_workers": 5}, {"prefetch_factor": 1}, {"batch_size": 3}]


def test_pinned_batches_hold_none_and_ranks_multiply():
    # 16 MiB: 13,421,772 B usable over 2 ranks of 1 MiB batches: 6 batches a rank, none held (pinned).
    # workers: 2·3 = 6 fit; prefetch 1: 4 fit; batch_size: 8 batches × 2 ranks of a page-floored 0.8 MiB is 0 samples.
    loader = dict(batch_size=1, num_workers=4, prefetch_factor=2, sample_bytes=MiB, pin_memory=True, ranks=2)
    assert _fits(16 * MiB, **loader) == [{"num_workers": 3}, {"prefetch_factor": 1}]


def test_where_no_knob_fits_the_loader_runs_in_its_process():
    # 4 MiB: 3,355,443 B usable, less than one 4 MiB batch; one worker cannot go lower but to none.
    assert _fits(4 * MiB, batch_size=4, num_workers=1, batch_bytes=4 * MiB) == [{"num_workers": 0}]


def test_beside_what_the_other_consumers_take():
    # 256 MiB: 214,748,364 B usable less NCCL's 150 MiB (157,286,400 B) = 57,461,964 B for the loader:
    # 57,461,964 // 4 MiB = 13 batches, 12 beyond the held one. workers: 2·6 + 1 = 13 batches fit, 2·7 + 1 do not;
    # prefetch 1: 8 + 1 = 9; batch_size: 17 batches of a page-floored 57,461,964 // 17 = 3.22 MiB: 3 samples.
    loader = dict(batch_size=4, num_workers=8, prefetch_factor=2, sample_bytes=MiB)
    assert _fits(256 * MiB, others=150 * MiB, **loader) == [
        {"num_workers": 6},
        {"prefetch_factor": 1},
        {"batch_size": 3},
    ]


@pytest.mark.parametrize(
    "others, fits",
    [
        (4 * MiB, [{"num_workers": 0}]),  # 5 MiB: 4,194,304 B usable, all NCCL's: a loader that takes none fits
        (4 * MiB + 1, []),  # one byte more: nothing the loader does makes room
    ],
)
def test_where_the_others_take_all_there_is_room_for(others, fits):
    assert _fits(5 * MiB, others=others, batch_size=1, num_workers=2, sample_bytes=MiB) == fits


def test_each_ranks_loader_counts_in_the_batch_size_that_fits():
    # 64 MiB: 53,687,091 B usable, 2 ranks of 4 MiB batches: 53,687,091 // 8 MiB = 6 batches a rank, 5 beyond the held
    # one. workers: 2·2 + 1 = 5 fit, 2·3 + 1 = 7 do not; prefetch 1: 4 + 1 = 5; batch_size: 9 batches × 2 ranks of a
    # page-floored 53,687,091 // 18 = 2.84 MiB: 2 samples (36 MiB; 3 would be 54 MiB).
    loader = dict(batch_size=4, num_workers=4, prefetch_factor=2, sample_bytes=MiB, ranks=2)
    assert _fits(64 * MiB, **loader) == [{"num_workers": 2}, {"prefetch_factor": 1}, {"batch_size": 2}]


@pytest.mark.parametrize("shm", [48 * MiB, 64 * MiB])
def test_a_loader_that_fits_by_the_formula_yet_failed_turns_each_knob_one_step_down(shm):
    # explain of a run that died in a /dev/shm its loader fits (something else took the rest): 4 workers, prefetch 4,
    # 2 MiB batches, (4·4 + 1) × 2 MiB = 34 MiB. 48 MiB: 40,265,318 B usable, 19 batches, 18 beyond the held one;
    # 64 MiB: 53,687,091 B, 24 beyond. Either way 3 workers and prefetch 3; a batch_size is offered only below the
    # one it has: 40,265,318 // 17 page-floored is 2 samples (its own), 53,687,091 // 17 is 3 (more than its own).
    loader = dict(batch_size=2, num_workers=4, prefetch_factor=4, sample_bytes=MiB)
    assert _fits(shm, **loader) == [{"num_workers": 3}, {"prefetch_factor": 3}]


def test_pinned_the_batch_the_loop_holds_takes_no_room():
    # pinned, 2 MiB batches in 28 MiB: 23,488,102 B usable, 11 batches, none held. workers: 4·2 = 8 fit, 4·3 = 12 do
    # not; prefetch 2: 2·4 = 8 fit; batch_size: 16 batches of a page-floored 23,488,102 // 16 = 1.4 MiB: 1 sample.
    loader = dict(batch_size=2, num_workers=4, prefetch_factor=4, sample_bytes=MiB, pin_memory=True)
    assert _fits(28 * MiB, **loader) == [{"num_workers": 2}, {"prefetch_factor": 2}, {"batch_size": 1}]


@pytest.mark.parametrize(
    "workers, prefetch, fits",
    [
        (8, 2, [{"num_workers": 1}]),  # 2·1 + 1 = 3 fit, 2·2 + 1 = 5 do not; prefetch 1 would need 8 + 1
        (1, 4, [{"prefetch_factor": 3}]),  # one worker is as low as workers go but none; 3·1 + 1 = 4 fit
    ],
)
def test_a_knob_that_cannot_go_lower_is_not_offered(workers, prefetch, fits):
    # 6 MiB: 5,033,164 B usable: 4 batches of 1 MiB, 3 beyond the held one
    assert _fits(6 * MiB, batch_size=1, num_workers=workers, prefetch_factor=prefetch, sample_bytes=MiB) == fits


def test_nothing_to_fit_without_a_loader_with_workers_or_a_known_shm():
    assert _fits(None, batch_size=1, num_workers=2, sample_bytes=MiB) == []  # its size not known, no memory limit
    assert _fits(64 * MiB, batch_size=1, num_workers=0, sample_bytes=MiB) == []  # the loader takes none already
    nccl = Requirement(64 * MiB, None, 0, (Need("nccl", 64 * MiB, "given"),), "nccl")
    assert fixes.fit_today(nccl, DOCKER) == ()


@pytest.mark.parametrize(
    "buffsize, smaller",
    [
        # a connection: 4096 + LL 524,288 + LL128 4,915,200 + SIMPLE, + 4 B of header in pages, + 8,192 B of send
        # side: 13,844,480 B (13.2 MiB) at 8 MiB, 6,504,448 B (6.2 MiB) at 1 MiB
        ("8388608", "smaller NCCL buffers: 1 MiB instead of 8 MiB cuts each connection from 13.2 MiB to 6.2 MiB"),
        ("0x100000", None),  # 1 MiB already (NCCL reads any base): nothing smaller to offer
        ("524288", None),  # 512 KiB: 1 MiB would double it
    ],
)
def test_smaller_nccl_buffers_only_where_its_own_are_larger(buffsize, smaller):
    facts = replace(DOCKER, nccl_env=(("NCCL_BUFFSIZE", buffsize),))
    need = Workload(consumers=Consumers(gpus=2, nccl="shm")).requirement(facts)
    ways = fixes.consumer_fixes(need, facts)
    assert [fix.summary for fix in ways] == [fixes.NCCL_SHM_OFF] + ([smaller] if smaller else [])
    assert said(ways[1:], facts) == ([("docker run -e NCCL_BUFFSIZE=1048576 ...",)] if smaller else [])
