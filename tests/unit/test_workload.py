"""A workload's requirement: the DataLoader's term and the consumers' beside it, for one target's facts."""

from __future__ import annotations

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.loader import LoaderSpec
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
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
