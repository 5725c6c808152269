"""A workload's requirement: the DataLoader's term and the consumers' beside it, for one target's facts."""

from __future__ import annotations

import dataclasses

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.loader import LoaderSpec
from shmdoctor.model import Facts, Ipc, Memory, Need, Shm, Target
from shmdoctor.render import render
from shmdoctor.rules import judge
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Consumers, Workload, labelled_requirement

SEED = LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB)


def facts(shm: int = 64 * MiB, *, gpus: int | None = None, env=(), limit: int | None = None, used: int = 0) -> Facts:
    return Facts(
        target=Target("container", "c"),
        shm=Shm(True, shm, used, shm - used, "docker-shm"),
        ipc=Ipc("private"),
        memory=Memory(limit, 100 * MiB, machine_bytes=16 * GiB),
        runtime="docker",
        gpu_count=gpus,
        nccl_env=tuple(env),
    )


def test_a_loader_alone_is_todays_requirement():
    need = Workload(SEED).requirement(facts())
    assert [n.term for n in need.breakdown] == ["dataloader"] and need.bytes == (2 * 4 + 1) * 100 * MiB
    assert need.formula == "(2·4 + 1) × 100 MiB" and need.batches_in_flight == 9 and need.ranks == 1


def test_nothing_given_is_no_requirement():
    assert Workload().requirement(facts(gpus=8)) is None


NCCL_8 = 60 * 9_650_176 + 8 * 34_213_888  # R=8, C=4: rings and trees, and a proxy pool a rank


def test_eight_gpus_detected_with_p2p_disabled_add_ncclss_rings_and_trees():
    need = Workload(SEED).requirement(facts(gpus=8, env=[("NCCL_P2P_DISABLE", "1")]))
    assert need.term("nccl").bytes == NCCL_8
    assert need.bytes == 900 * MiB + NCCL_8
    assert need.nccl_fallback == 0


def test_auto_assumes_p2p_and_keeps_the_fallback_for_a_warning():
    need = Workload(SEED, Consumers(gpus=8)).requirement(facts(2 * GiB))
    assert need.term("nccl").bytes == 0 and need.nccl_fallback == NCCL_8
    report = judge(facts(1024 * MiB), need)
    assert "nccl-shm-fallback" in [f.id for f in report.findings]
    assert "nccl-shm-fallback" not in [f.id for f in judge(facts(4 * GiB), need).findings]


def test_nccl_buffsize_from_the_environment():
    need = Workload(consumers=Consumers(gpus=2, nccl="shm")).requirement(facts(env=[("NCCL_BUFFSIZE", "524288")]))
    assert need.term("nccl").bytes == 8 * (5_971_968 + 8192) + 2 * 34_213_888  # R=2, C=4: 8 ring connections


def test_vllm_at_tensor_parallel_8_in_the_default_64_mib_is_refused_at_its_first_buffer():
    spec = Workload(consumers=Consumers(serve="vllm", tensor_parallel_size=8, nccl="p2p"))
    need = spec.requirement(facts())
    assert need.term("vllm").bytes == 2_206_204_202
    report = judge(facts(), need)
    assert report.verdict == "fail"
    top = report.findings[0]
    assert top.id == "shm-too-small" and "the scheduler's broadcast queue: 160.00 MiB required, 64.00 MiB free" in (
        top.message
    )
    assert any(f.ipc == "host" for f in top.fixes)


def test_ray_auto_in_a_4g_container_with_the_default_shm_falls_back_and_says_so():
    spec = Workload(consumers=Consumers(ray_object_store="auto"))
    f = facts(limit=4 * GiB)
    need = spec.requirement(f)
    store = int(0.3 * (4096 - 100) * MiB)  # 30% of the limit less what is in use: 1,257,032,908 B, under 10 GB
    assert need.term("ray").bytes == store == 1_257_032_908 and not need.term("ray").fails
    report = judge(f, need)
    assert [x.id for x in report.findings] == ["ray-object-store-fallback"] and report.verdict == "warn"
    roomy = facts(2 * GiB, limit=4 * GiB)
    assert "ray-object-store-fallback" not in [x.id for x in judge(roomy, spec.requirement(roomy)).findings]


def test_a_label_carries_the_consumers_too():
    need, notes = labelled_requirement(Workload(SEED), "gpus=4,nccl=shm,all_to_all=true", facts())
    # R=4, C=4: 16 ring + 12 tree + 24 all-to-all connections of 9,650,176 B, and a 34,213,888 B proxy pool a rank
    assert need.term("nccl").bytes == 52 * 9_650_176 + 4 * 34_213_888
    assert notes and "gpus=4" in notes[0]


@pytest.mark.parametrize(
    "label, message",
    [
        ("gpus=100000", "gpus must be at most 1024"),
        ("gpus=0", "gpus must be an integer of at least 1"),
        ("gpus=²", "gpus='²' is not a value it takes"),  # a digit to str.isdigit, not to int
        ("nodes=" + "9" * 5000, "is not a value it takes"),  # more digits than int() takes
        ("nccl=maybe", "nccl='maybe' is not a value it takes"),
        ("tensor_parallel_size=2", "needs --serve"),
        ("ray_object_store=lots", "cannot read"),
    ],
)
def test_bad_consumer_labels_are_one_line_usage_errors(label, message):
    with pytest.raises(UsageError, match=message):
        Workload.parse(label)


def test_text_a_single_consumer_is_one_need_line_and_a_long_rule_id_keeps_its_space(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    # Ray alone in 64 MiB and 4 GiB: as `docker run --shm-size=64m --memory=4g ... check --ray-object-store auto`
    f = facts(limit=4 * GiB)
    text = render(judge(f, Workload(consumers=Consumers(ray_object_store="auto")).requirement(f)), "text")
    lines = text.splitlines()
    assert "  warning ray-object-store-fallback (the verdict above)" in lines
    need = [line for line in lines if line.startswith("Need")]
    # 0.3 × (4096 − 100) MiB used = 1,199 MiB
    assert need == ["Need    1.17 GiB for ray: object store (30% of the memory available, Ray's default)"]
    assert lines[-1] == need[0]  # no breakdown line repeating it


def test_text_nccl_over_p2p_is_a_consumer_of_the_job_at_0_b_without_a_bare_0(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    f = facts(2 * GiB)
    text = render(judge(f, Workload(SEED, Consumers(gpus=8)).requirement(f)), "text")
    assert text.startswith("OK  this job needs 900 MiB")
    nccl = next(line for line in text.splitlines() if line.lstrip().startswith("nccl"))
    assert nccl.split(None, 3)[1:3] == ["0", "B"] and "0:" not in nccl
    alone = render(judge(f, Workload(SEED).requirement(f)), "text")
    assert alone.startswith("OK  this loader needs 900 MiB")


def test_a_label_with_consumers_is_called_a_workload_and_one_without_a_loader():
    _, notes = labelled_requirement(Workload(SEED), "serve=vllm,tensor_parallel_size=8", facts())
    assert notes == ("workload from its shmdoctor.loader label: serve=vllm,tensor_parallel_size=8",)
    _, notes = labelled_requirement(Workload(), "batch_size=8,num_workers=2,sample_bytes=1MiB", facts())
    assert notes[0].startswith("loader from its shmdoctor.loader label: ")


# --- each key of a label, each branch of the requirement (expected values written here) -----------------------------


def test_a_label_gives_every_consumer_key_in_any_case():
    label = "gpus=8,nccl=SHM,all-to-all=yes,serve=vLLM,tensor_parallel_size=4,nodes=2,ray_object_store=Auto"
    assert Workload.parse(label + ",triton_instances=3").consumers == Consumers(
        gpus=8, nccl="shm", all_to_all=True, nodes=2, serve="vllm", tensor_parallel_size=4,
        ray_object_store="auto", triton_instances=3,
    )  # fmt: skip
    assert Workload.parse("ray_object_store=2g").consumers.ray_object_store == 2 * GiB
    assert Workload.parse("gpus=" + "0" * 63 + "1").consumers.gpus == 1  # 64 digits: the most a number has
    assert Workload.parse(f"nodes={1_000_000},triton_instances={1_000_000}").consumers.nodes == 1_000_000


@pytest.mark.parametrize(
    "pair",
    [
        "all_to_all=off",  # nccl's values, under another key
        "nodes=auto",
        "gpus=p2p",
        "nccl=vllm",  # serve's values, under another key
        "triton_instances=vllm",
        "gpus=sglang",
        "nodes=yes",  # all_to_all's
        "triton_instances=2k",  # a size, where a count is asked for
        "gpus=" + "0" * 64 + "1",  # 65 digits
    ],
)
def test_a_value_of_another_key_is_refused(pair):
    with pytest.raises(UsageError) as e:
        Workload.parse(pair)
    key, value = pair.split("=")
    assert str(e.value) == f"workload spec {pair!r}: {key}={value!r} is not a value it takes"


def test_past_a_million_nodes_is_refused():
    with pytest.raises(UsageError, match="^nodes must be at most 1000000 "):
        Workload.parse("nodes=1000001")


def test_a_workload_is_frozen_and_validated_only_where_a_loader_is_given():
    workload = Workload(consumers=Consumers(gpus=2))
    workload.validate()  # nothing of a loader to refuse
    with pytest.raises(dataclasses.FrozenInstanceError):
        workload.loader = SEED  # type: ignore[misc]
    with pytest.raises(UsageError):
        Workload(LoaderSpec(batch_size=100, num_workers=4)).validate()  # no sample size: nothing to judge


def test_one_gpu_and_nothing_else_needs_nothing():
    need = Workload(consumers=Consumers(gpus=1)).requirement(facts())
    assert (need.bytes, need.breakdown, need.formula) == (0, (), "0")
    assert (need.ranks, need.tensor_parallel, need.batches_in_flight, need.nccl_fallback) == (1, 1, 0, 0)


def test_ranks_are_the_gpus_given_not_those_detected():
    need = Workload(SEED).requirement(facts(gpus=8, env=[("NCCL_P2P_DISABLE", "1")]))
    assert (need.ranks, need.tensor_parallel) == (1, 1)  # a loader's process; its GPUs' NCCL still counted
    need = Workload(SEED, Consumers(gpus=4)).requirement(facts())
    assert (need.ranks, need.tensor_parallel) == (4, 1)
    need = Workload(SEED).requirement(facts())
    assert (need.ranks, need.tensor_parallel, need.nccl_fallback) == (1, 1, 0)


def test_two_gpus_or_two_nodes_bring_nccl():
    two = Workload(consumers=Consumers(gpus=2)).requirement(facts())
    assert [n.term for n in two.breakdown] == ["nccl"] and two.term("nccl").bytes == 0  # P2P assumed
    both = Workload(SEED, Consumers(gpus=2, nccl="shm")).requirement(facts())
    assert both.formula == "dataloader + nccl"
    # Two nodes: the proxy pool a rank (34,213,888 B) over the network even with P2P; without P2P NCCL would add
    # the rings and trees of eight ranks (60 connections × 9,650,176 B) on top.
    nodes = Workload(consumers=Consumers(gpus=8, nodes=2)).requirement(facts())
    assert nodes.term("nccl").bytes == 8 * 34_213_888 and nodes.nccl_fallback == 60 * 9_650_176
    pair = Workload(consumers=Consumers(gpus=2, nodes=2)).requirement(facts())  # rings alone: 8 connections
    assert pair.term("nccl").bytes == 2 * 34_213_888 and pair.nccl_fallback == 8 * 9_650_176
    one_gpu = Workload(consumers=Consumers(nodes=2)).requirement(facts())
    assert one_gpu.term("nccl").bytes == 34_213_888


def test_with_shm_disabled_nccl_takes_its_proxy_pools_and_has_no_fallback():
    need = Workload(consumers=Consumers(gpus=8)).requirement(facts(env=[("NCCL_SHM_DISABLE", "1")]))
    assert need.term("nccl").bytes == 8 * 34_213_888 and need.nccl_fallback == need.nccl_shm == 0


def test_what_nccls_shm_connections_take_is_what_turning_shm_off_would_free():
    pair = Workload(consumers=Consumers(gpus=2, nccl="shm")).requirement(facts())
    assert pair.nccl_shm == 8 * 9_650_176  # rings of 2 ranks: 8 connections; the 2 proxy pools stay
    assert Workload.parse("gpus=2,nccl=shm").requirement(facts()).nccl_shm == 8 * 9_650_176  # the mode as read
    eight = Workload(consumers=Consumers(gpus=8, nccl="shm", nodes=2)).requirement(facts())
    assert eight.nccl_shm == 60 * 9_650_176  # rings and trees of 8 ranks; other nodes' traffic through the pools
    for assumed in (Consumers(gpus=2), Consumers(gpus=2, nodes=2), Consumers(nccl="shm")):  # P2P; one GPU
        assert Workload(consumers=assumed).requirement(facts()).nccl_shm == 0
    assert Workload(SEED).requirement(facts()).nccl_shm == 0  # no NCCL


def test_a_variable_nccl_cannot_read_is_as_if_unset():
    unset = Workload(consumers=Consumers(gpus=2, nccl="shm")).requirement(facts())
    default = 8 * 9_650_176 + 2 * 34_213_888  # rings of 2 ranks with 4 MiB buffers, 2 proxy pools
    for bad in ("4MiB", "lots"):
        need = Workload(consumers=Consumers(gpus=2, nccl="shm")).requirement(facts(env=[("NCCL_BUFFSIZE", bad)]))
        assert need.term("nccl").bytes == unset.term("nccl").bytes == default


def test_a_server_named_in_a_label_adds_its_term():
    for server in ("vllm", "sglang"):
        need = Workload.parse(f"serve={server},tensor_parallel_size=2").requirement(facts())
        assert server in [n.term for n in need.breakdown] and need.tensor_parallel == 2 and need.ranks == 2


def test_rays_store_as_given_or_thirty_percent_of_the_memory_available():
    need = Workload(consumers=Consumers(ray_object_store=2 * GiB)).requirement(facts())
    assert need.term("ray") == Need("ray", 2 * GiB, "object store (as given)", fails=False)
    unknown = Facts(**{**facts().__dict__, "memory": Memory(None, None)})
    ray = Workload(consumers=Consumers(ray_object_store="auto")).requirement(unknown).term("ray")
    assert ray == Need("ray", 0, "object store unknown without the memory it sees: give --ray-object-store SIZE")
    for limit in (10 * GiB, 10 * GiB + 3):  # 30% rounded down, of a limit with nothing used (none read)
        room = Facts(**{**facts().__dict__, "memory": Memory(limit, None)})
        ray = Workload(consumers=Consumers(ray_object_store="auto")).requirement(room).term("ray")
        assert ray.bytes == {10 * GiB: 3_221_225_472, 10 * GiB + 3: 3_221_225_472}[limit]
        assert ray.formula == "object store (30% of the memory available, Ray's default)"
