"""Each consumer's term against the worked numbers FACTS.md gives from their source ("Other /dev/shm users")."""

from __future__ import annotations

import pytest

from shmdoctor import consumers
from shmdoctor.sizes import GiB, MiB


def test_nccl_segment_and_connection_as_nccl_prints_and_tmpfs_charges_them():
    assert consumers.nccl_segment_bytes() == 9_637_888  # NCCL's error prints 9637892 (+4)
    assert consumers.nccl_connection_bytes() == 9_650_176
    assert consumers.nccl_segment_bytes(524_288) == 5_967_872  # nccl-tests#166, NCCL_BUFFSIZE=524288


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


@pytest.mark.parametrize(
    "ranks, all_to_all, connections",
    [(2, False, 8), (2, True, 12), (8, False, 60), (8, True, 172), (1, True, 0)],
)
def test_nccl_connections_rings_trees_from_three_ranks_and_all_to_all(ranks, all_to_all, connections):
    assert consumers.nccl_connections(ranks, all_to_all=all_to_all) == connections


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
    ],
)
def test_nccl_transport_from_the_flag_and_the_environment(mode, env, transport):
    got, why = consumers.nccl_transport(mode, env)
    assert got == transport
    assert "=" not in why  # names a variable, never its value


def test_vllm_tensor_parallel_8():
    assert consumers.vllm(8).bytes == 2_206_204_202  # FACTS.md: 2.05 GiB if every slot is touched
    assert consumers.vllm(1).bytes == 0


def test_sglang_tp_queue():
    assert consumers.sglang(8).bytes == (4 * MiB + 8) * 6


def test_ray_default_store_and_its_fallback():
    # 4 GiB container, 100 MB used, 64 MiB of /dev/shm: 30% of what is available, capped at max(10 GB, 95% shm)
    store = consumers.ray_default_store(4 * GiB - 100_000_000, 64 * MiB)
    assert store == int((4 * GiB - 100_000_000) * 0.3)
    assert consumers.ray_falls_back(store, 64 * MiB)
    assert not consumers.ray_falls_back(store, 2 * GiB)
    # a big machine: capped by what /dev/shm has (never below 10 GB), and by 200 GB
    assert consumers.ray_default_store(1000 * GiB, 64 * GiB) == int(64 * GiB * 0.95)
    assert consumers.ray_default_store(1000 * GiB, 1 * GiB) == 10**10
    assert consumers.ray_default_store(2000 * GiB, None) == 200 * 10**9


def test_triton_one_region_an_instance():
    assert consumers.triton(4).bytes == 4 * MiB
