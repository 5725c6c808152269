"""Each consumer's term against the worked numbers FACTS.md gives from their source ("Other /dev/shm users")."""

from __future__ import annotations

import pytest

from shmdoctor import consumers
from shmdoctor.sizes import GiB, MiB


def test_nccl_segment_and_connection_as_nccl_prints_and_tmpfs_charges_them():
    assert consumers.nccl_segment_bytes() == 9_637_888  # NCCL's error prints 9637892 (+4)
    assert consumers.nccl_connection_bytes() == 9_650_176
    assert consumers.nccl_segment_bytes(524_288) == 5_967_872  # nccl-tests#166, NCCL_BUFFSIZE=524288


# NCCL_BUFFSIZE is any number of bytes: the receive file is 4096 + 524,288 + 4,915,200 + SIMPLE + 4 B, charged in
# 4 KiB pages, and the send side's 4096 + 4 B takes two pages (8,192 B)
@pytest.mark.parametrize(
    "buffsize, segment, connection",
    [
        (4 * MiB - 4, 9_637_884, 9_637_888 + 8_192),  # the file fills its last page to the byte
        (4 * MiB - 3, 9_637_885, 9_641_984 + 8_192),  # 1 B over: one page more
        (4 * MiB + 4096, 9_641_984, 9_646_080 + 8_192),
    ],
)
def test_nccl_a_buffsize_off_whole_pages(buffsize, segment, connection):
    assert consumers.nccl_segment_bytes(buffsize) == segment
    assert consumers.nccl_connection_bytes(buffsize) == connection


# /dev/shm's statvfs peak of two ranks on two H200s, NCCL 2.28.9, P2P and cuMem off (benchmarks/nccl_shm.py,
# docs/gpu-nccl.md): an all-reduce of 4 MiB, and an all-to-all after it.
MEASURED_TWO_H200 = [
    (4 * MiB, False, 145_629_184),
    (4 * MiB, True, 184_229_888),
    (1 * MiB, False, 120_463_360),
    (1 * MiB, True, 146_481_152),
]


@pytest.mark.parametrize("buffsize, all_to_all, peak", MEASURED_TWO_H200)
def test_nccl_shm_transport_is_what_two_h200s_took_to_the_byte(buffsize, all_to_all, peak):
    need = consumers.nccl(2, "shm", buffsize=buffsize, all_to_all=all_to_all)
    assert need.bytes == peak and need.term == "nccl"


def test_nccl_sockets_still_map_a_proxy_pool_a_rank():
    assert consumers.nccl(2, "off").bytes == 68_427_776  # measured with NCCL_SHM_DISABLE=1: NET/Socket
    assert consumers.nccl_proxy_bytes(None) == 34_213_888  # NCCL's "Allocated 34210180 bytes", page-rounded


@pytest.mark.parametrize("transport", ["shm", "off"])
def test_nccl_one_rank_talks_to_no_one(transport):
    need = consumers.nccl(1, transport)
    assert (need.bytes, need.formula) == (0, f"0: {transport} transport, no /dev/shm between the 1 local GPUs")


# rings R·C; trees (R−1)·C from three ranks; all-to-all 2 per ordered pair, 2·R·(R−1) (FACTS.md; C = 4 measured)
@pytest.mark.parametrize(
    "ranks, all_to_all, connections",
    [(2, False, 8), (2, True, 12), (3, False, 12 + 8), (3, True, 12 + 8 + 12), (8, False, 60), (8, True, 172)]
    + [(1, True, 0)],
)
def test_nccl_connections_rings_trees_from_three_ranks_and_all_to_all(ranks, all_to_all, connections):
    assert consumers.nccl_connections(ranks, 4, all_to_all) == connections


# 9,650,176 B a connection is "9.2 MiB", 34,213,888 B a proxy pool "32.6 MiB"
@pytest.mark.parametrize(
    "ranks, all_to_all, formula, total",
    [
        (2, False, "8 connections (rings, R=2, C=4) × 9.2 MiB + 2 ranks × 32.6 MiB proxy pool", 145_629_184),
        (
            2,
            True,
            "12 connections (rings + all-to-all, R=2, C=4) × 9.2 MiB + 2 ranks × 32.6 MiB proxy pool",
            184_229_888,
        ),
        (3, False, "20 connections (rings + trees, R=3, C=4) × 9.2 MiB + 3 ranks × 32.6 MiB proxy pool", 295_645_184),
    ],
)
def test_nccl_formula_names_what_it_counts(ranks, all_to_all, formula, total):
    need = consumers.nccl(ranks, "shm", all_to_all=all_to_all)
    assert (need.formula, need.bytes) == (formula, total)


def test_nccl_worked_figures_for_eight_gpus():
    assert round(consumers.nccl(8, "shm").bytes / MiB) == 813  # 60 connections + 8 proxy pools
    assert round(consumers.nccl(8, "shm", all_to_all=True).bytes / GiB, 2) == 1.80


@pytest.mark.parametrize("transport", ["p2p", "cumem-host"])
def test_nccl_without_shm_transport_takes_nothing_on_one_node(transport):
    assert consumers.nccl(8, transport).bytes == 0


# each pool's file is 4 B longer than the pool, and tmpfs charges whole 4 KiB pages: 34,210,180 B -> 8,353 pages
@pytest.mark.parametrize(
    "version, pages",
    [(None, 8_353), ((2, 30), 8_353), ((2, 24), 3_457), ((2, 22), 1_793), ((2, 19), 1_025)],
)
def test_nccl_multi_node_proxy_pool_by_version(version, pages):
    assert consumers.nccl(4, "p2p", nodes=2, version=version).bytes == 4 * pages * 4096


# FACTS.md: 34,210,176 B from 2.28, 14,156,128 B in 2.24, 7,340,384 B in 2.21-2.22, 4,194,656 B up to 2.19
@pytest.mark.parametrize(
    "version, pool",
    [((2, 28), 34_210_176), ((2, 27), 14_156_128), ((2, 24), 14_156_128), ((2, 23), 7_340_384)]
    + [((2, 21), 7_340_384), ((2, 20), 4_194_656), ((1, 3), 4_194_656)],
)
def test_nccl_proxy_pool_from_the_version_it_came_in(version, pool):
    assert consumers.nccl_proxy_pool(version) == pool


@pytest.mark.parametrize(
    "mode, env, transport",
    [
        ("auto", {}, "p2p"),
        ("auto", {"NCCL_P2P_DISABLE": "1"}, "shm"),
        ("auto", {"NCCL_P2P_DISABLE": "0"}, "p2p"),
        ("auto", {"NCCL_SHM_DISABLE": "1", "NCCL_P2P_DISABLE": "1"}, "off"),
        ("auto", {"NCCL_CUMEM_ENABLE": "1", "NCCL_CUMEM_HOST_ENABLE": "1", "NCCL_P2P_DISABLE": "1"}, "cumem-host"),
        ("shm", {}, "shm"),
        ("p2p", {"NCCL_P2P_DISABLE": "1"}, "p2p"),
        ("auto", {"NCCL_CUMEM_ENABLE": "1", "NCCL_CUMEM_HOST_ENABLE": "1"}, "cumem-host"),
        ("auto", {"NCCL_CUMEM_ENABLE": "1"}, "p2p"),
    ],
)
def test_nccl_transport_from_the_flag_and_the_environment(mode, env, transport):
    got, why = consumers.nccl_transport(mode, env)
    assert got == transport
    assert "=" not in why  # names a variable, never its value


@pytest.mark.parametrize("env, transport", [({}, "p2p"), ({"NCCL_P2P_DISABLE": "1"}, "shm")])
def test_nccl_transport_of_a_mode_read_from_a_label(env, transport):
    mode = "AUTO".lower()  # as Consumers.parse reads nccl=AUTO: a string made at run time, not the literal
    assert consumers.nccl_transport(mode, env)[0] == transport  # type: ignore[arg-type]


def test_vllm_tensor_parallel_8():
    assert consumers.vllm(8).bytes == 2_206_204_202  # FACTS.md: 2.05 GiB if every slot is touched


# T=2: the scheduler's (16 MiB + 1 + 2) × 10, two workers' (24 MiB + 2) × 10, the TP group's (4 MiB + 1 + 1) × 6
VLLM_2 = [
    ("the scheduler's broadcast queue", (16_777_216 + 3) * 10),
    ("worker 0's response queue", (25_165_824 + 2) * 10),
    ("worker 1's response queue", (25_165_824 + 2) * 10),
    ("the tensor-parallel group's queue", (4_194_304 + 2) * 6),
]


def test_vllm_tensor_parallel_2_and_1():
    assert consumers.vllm_buffers(2) == VLLM_2
    assert consumers.vllm(2).bytes == 167_772_190 + 2 * 251_658_260 + 25_165_836
    assert consumers.vllm_buffers(1) == []  # one process: no queue
    one = consumers.vllm(1)
    assert (one.bytes, one.formula) == (0, "0: tensor_parallel_size 1 runs in one process")


def test_vllm_refuses_the_first_buffer_that_does_not_fit_and_takes_exactly_what_is_free():
    total = 696_254_546  # VLLM_2's sum: vLLM's check passes where required <= free
    assert consumers.vllm_refused(2, total) is None
    assert consumers.vllm_refused(2, 10 * GiB) is None
    assert consumers.vllm_refused(2, total - 1) == ("the tensor-parallel group's queue", 25_165_836, 25_165_835)
    assert consumers.vllm_refused(2, 167_772_189) == ("the scheduler's broadcast queue", 167_772_190, 167_772_189)
    assert consumers.vllm_refused(1, 0) is None


def test_sglang_tp_queue():
    assert consumers.sglang(8).bytes == (4 * MiB + 8) * 6
    assert consumers.sglang(2).bytes == 25_165_836  # (4 MiB + 2) × 6
    one = consumers.sglang(1)
    assert (one.bytes, one.formula) == (0, "0: tensor_parallel_size 1 runs in one process")


def test_ray_default_store():
    # 4 GiB container, 100 MB used, 64 MiB of /dev/shm: 30% of what is available, capped at max(10 GB, 95% shm)
    store = consumers.ray_default_store(4 * GiB - 100_000_000, 64 * MiB)
    assert store == int((4 * GiB - 100_000_000) * 0.3)
    # a big machine: capped by what /dev/shm has (never below 10 GB), and by 200 GB
    assert consumers.ray_default_store(1000 * GiB, 64 * GiB) == int(64 * GiB * 0.95)
    assert consumers.ray_default_store(1000 * GiB, 1 * GiB) == 10**10
    assert consumers.ray_default_store(2000 * GiB, None) == 200 * 10**9


def test_ray_refuses_a_store_above_10_gb_only():
    # services.py: a store short of /dev/shm raises where object_store_memory > REQUIRE_SHM_SIZE_THRESHOLD (10**10)
    assert not consumers.ray(10_000_000_000, given=True).fails
    assert consumers.ray(10_000_000_001, given=True).fails


def test_triton_one_region_an_instance():
    assert consumers.triton(4).bytes == 4 * MiB
