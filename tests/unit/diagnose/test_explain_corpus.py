"""The catalogue against its corpus: real failure texts give the cause and consumer the case states (written from the
text, not from the catalogue), near-misses give nothing."""

import functools
from pathlib import Path

import pytest
import yaml

from shmdoctor.diagnose import BY_ID, CAUSES, CONSUMERS, SHM_CAUSES, SIGNATURES, judge, scan_text
from shmdoctor.diagnose.place import Place, elsewhere
from shmdoctor.diagnose.scan import EXCERPT
from shmdoctor.sizes import parse_size


def stated(where: dict, clues) -> Place:
    """The place a thread states, given as a user would: --shm-size, --where kubernetes."""
    shm = parse_size(str(where["shm"])) if "shm" in where else None
    return elsewhere(clues, shm, "kubernetes" if where.get("form") == "kubernetes" else None)


DATA = Path(__file__).resolve().parents[2] / "data" / "explain"
CASES = yaml.safe_load((DATA / "cases.yaml").read_text())
HARVESTED = yaml.safe_load((DATA / "harvested.yaml").read_text())
TEXT_SIGNATURES = [s.id for s in SIGNATURES if s.anchor]


def _text(case: dict) -> str:
    return (DATA / case["file"]).read_text() if "file" in case else case["text"]


def _stated(case: dict, key: str) -> list[str]:
    value = case[key]
    return sorted(value if isinstance(value, list) else [value])


@pytest.mark.parametrize(
    "case", CASES + HARVESTED, ids=[f"{i}:{c['source'][:60]}" for i, c in enumerate(CASES + HARVESTED)]
)
def test_case(case):
    scanner = scan_text(_text(case))
    found = scanner.diagnoses()
    if "fires" in case:
        assert sorted({d.signature for d in found}) == sorted(case["fires"]), case["source"]
    if "where" in case:  # judged in the place its thread tells: the shared-memory causes that stand there
        judged = judge(found, stated(case["where"], scanner.clues), clues=scanner.clues).shm_diagnoses
        want = [c for c in _stated(case, "cause") if c in SHM_CAUSES]
        assert sorted({d.cause for d in judged}) == want, case["source"]
    if case["cause"] == "not-shm" and "where" in case:  # the text alone says /dev/shm: the place says otherwise
        assert found, case["source"]
        return
    if case["cause"] == "none":
        assert found == (), case["source"]
        return
    assert sorted({d.cause for d in found}) == _stated(case, "cause"), case["source"]
    assert sorted({d.consumer for d in found}) == _stated(case, "consumer"), case["source"]
    for d in found:
        assert d.line is not None and len(d.excerpt) <= EXCERPT + 2
        assert "\n" not in d.excerpt
    if "bytes_needed" in case:
        assert {d.bytes_needed for d in found if d.bytes_needed is not None} == {case["bytes_needed"]}


@functools.cache
def _fired_by_the_harvest() -> frozenset[str]:
    """The signatures the harvested texts fire, read once for every signature's test."""
    return frozenset(d.signature for c in HARVESTED for d in scan_text(_text(c)).diagnoses())


@pytest.mark.parametrize("sig", TEXT_SIGNATURES)
def test_every_signature_has_a_case_that_fires_and_a_near_miss(sig):
    fired = any(sig in c["fires"] for c in CASES) or sig in _fired_by_the_harvest()
    assert fired, f"no case fires {sig}"
    assert any(c.get("near") == sig and not c["fires"] for c in CASES), f"no near-miss for {sig}"


def test_catalogue_is_well_formed():
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids))
    for s in SIGNATURES:
        assert s.cause in CAUSES and s.consumer in CONSUMERS and s.source and s.meaning
        assert all(other in BY_ID for other in s.superseded_by)


def test_every_case_states_its_source_cause_and_consumer():
    for c in CASES + HARVESTED:
        assert c["source"].strip()
        if c["cause"] == "none":
            assert "consumer" not in c, c["source"]
            continue
        assert set(_stated(c, "cause")) <= set(CAUSES), c["source"]
        assert set(_stated(c, "consumer")) <= set(CONSUMERS), c["source"]
    # the harvested texts are real: each names the thread it was quoted from
    assert all(c["source"].startswith("https://") for c in HARVESTED)
