"""The model's own decisions: a report's verdict and headline, a fix that sets something, a requirement's terms, and
every document frozen. Expected values are written here."""

from __future__ import annotations

import dataclasses

import pytest

from shmdoctor.model import (
    Facts,
    Finding,
    Fix,
    Ipc,
    LoaderConfig,
    Memory,
    Need,
    Report,
    Requirement,
    Shm,
    Swarm,
    Target,
    Value,
)

MiB = 1024 * 1024


def _facts(size: int | None = 64 * MiB, used: int = 0) -> Facts:
    free = None if size is None else size - used
    return Facts(
        target=Target("local", "this machine"),
        shm=Shm(present=True, size_bytes=size, used_bytes=used, free_bytes=free, source="system"),
        ipc=Ipc("private"),
        memory=Memory(limit_bytes=None, used_bytes=None),
    )


LOADER = LoaderConfig(batch_size=32, num_workers=4, prefetch_factor=2, pin_memory=False, batch_bytes=3 * MiB)
NEEDS = (Need("dataloader", 24 * MiB, "8 batches x 3 MiB"), Need("nccl", 9 * MiB, "NCCL's buffers"))
REQUIREMENT = Requirement(bytes=33 * MiB, loader=LOADER, batches_in_flight=8, breakdown=NEEDS, formula="24 + 9 MiB")


def _report(*severities: str, fail_on: str = "error", requirement: Requirement | None = None, **facts) -> Report:
    findings = tuple(Finding(f"rule-{s}", s, f"a finding of severity {s}") for s in severities)  # type: ignore[arg-type]
    return Report(facts=_facts(**facts), requirement=requirement, findings=findings, fail_on=fail_on)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "severities, fail_on, verdict, exit_code",
    [
        ((), "error", "ok", 0),
        ((), "warning", "ok", 0),
        ((), "info", "ok", 0),  # nothing found fails nothing, whatever the threshold
        (("info",), "error", "ok", 0),
        (("info",), "warning", "ok", 0),
        (("info",), "info", "fail", 1),
        (("warning", "info"), "error", "warn", 0),
        (("warning",), "warning", "fail", 1),
        (("error", "info"), "warning", "fail", 1),  # above the threshold, not only at it
        (("error",), "error", "fail", 1),
    ],
)
def test_the_verdict_is_the_worst_finding_against_fail_on(severities, fail_on, verdict, exit_code):
    report = _report(*severities, fail_on=fail_on)
    assert report.verdict == verdict and report.exit_code == exit_code


def test_the_headline_is_the_first_finding_above_info_else_the_size_and_what_fits():
    assert _report("info", "warning", "error").headline() == "a finding of severity warning"
    assert _report("info").headline() == (
        "/dev/shm is 64 MiB; give a loader (--batch-size, --num-workers, --sample-bytes) to judge it"
    )
    assert _report(size=None).headline().startswith("/dev/shm is of unknown size; give a loader")
    # what is free, as the failure says it ("which is 23.5 GiB" read as the need's own size)
    assert _report(requirement=REQUIREMENT).headline() == "this job needs 33 MiB of /dev/shm; 64 MiB is free: it fits"
    alone = dataclasses.replace(REQUIREMENT, bytes=24 * MiB, breakdown=NEEDS[:1])
    used = _report(requirement=alone, used=16 * MiB)
    assert used.headline() == "this loader needs 24 MiB of /dev/shm; 48 MiB is free: it fits"
    read = dataclasses.replace(used.facts, shm=Shm.unmeasured(64 * MiB, "docker-shm", "ShmSize"))  # lint, audit
    assert (
        dataclasses.replace(used, facts=read).headline()
        == "this loader needs 24 MiB of /dev/shm; it has 64 MiB: it fits"
    )


def test_a_requirements_terms_by_name_whatever_string_the_name_arrives_as():
    nccl = "".join(["nc", "cl"])  # read from a document, not the module's own literal
    assert REQUIREMENT.term(nccl) is NEEDS[1] and REQUIREMENT.term("ray") is None
    assert REQUIREMENT.failing_bytes == 33 * MiB
    slow = dataclasses.replace(REQUIREMENT, breakdown=(*NEEDS, Need("ray", 5 * MiB, "the object store", fails=False)))
    assert slow.failing_bytes == 33 * MiB  # Ray's store falls back to /tmp: it slows, it does not fail


def test_a_fix_sets_something_only_with_a_value_to_set():
    assert Fix("restart it").sets is False
    assert Fix("use this loader", loader={"num_workers": 2}).sets is False  # settings of the job, not the target's
    assert [Fix("", shm_bytes=MiB).sets, Fix("", memory_bytes=MiB).sets, Fix("", ipc="private").sets] == [True] * 3
    assert [Fix("", env=(("NCCL_SHM_DISABLE", "1"),)).sets, Fix("", nofile=65536).sets] == [True, True]


def test_one_rank_and_no_tensor_parallelism_unless_said():
    assert LOADER.ranks == 1 and LOADER.tensors_per_batch == 1 and LOADER.sample_bytes is None
    assert REQUIREMENT.ranks == 1 and REQUIREMENT.tensor_parallel == 1 and REQUIREMENT.nccl_fallback == 0


@pytest.mark.parametrize(
    "document",
    [
        Target("local", "this machine"),
        _facts().shm,
        Ipc("private"),
        Memory(None, None),
        Swarm(),
        _facts(),
        LOADER,
        NEEDS[0],
        REQUIREMENT,
        Fix("restart it"),
        Finding("shm-too-small", "error", "too small"),
        _report(),
    ],
    ids=lambda d: type(d).__name__,
)
def test_every_document_is_frozen(document):
    name = dataclasses.fields(document)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(document, name, None)


def test_equality_hash_and_repr_are_dataclasses_own():
    """model.Value writes them once for every class (dataclasses would compile them for each as check starts): the
    same as generated ones, field by field, in order."""
    memory = Memory(1024, 512)
    assert repr(memory) == "Memory(limit_bytes=1024, used_bytes=512, machine_bytes=None)"
    assert repr(Ipc("container", "db")) == "Ipc(mode='container', owner='db')"
    assert memory == Memory(1024, 512, None) and memory != Memory(1024, 513)
    assert hash(memory) == hash((1024, 512, None)) and len({memory, Memory(1024, 512)}) == 1
    # Another class is never equal, even with the same values; nor is a tuple of them.
    assert Ipc("host") != Swarm("host") and memory.__eq__((1024, 512, None)) is NotImplemented  # ("host", None) both
    assert _report() == _report() and hash(_report()) == hash(_report())  # nested values, ClassVar left out
    with pytest.raises(TypeError, match="unhashable type: 'dict'"):
        hash(Fix("lower it", loader={"num_workers": 2}))  # as a generated __hash__ does


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _One(Value):
    size: int


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _Neither(Value):
    pass


def test_one_field_or_none_is_still_a_tuple_of_values():
    assert _One(5) == _One(5) != _One(6) and hash(_One(5)) == hash((5,)) and repr(_One(5)) == "_One(size=5)"
    assert _Neither() == _Neither() and hash(_Neither()) == hash(()) and repr(_Neither()) == "_Neither()"
