"""The catalogue against its corpus: real failure texts fire their signature, near-misses fire nothing."""

from pathlib import Path

import pytest
import yaml

from shmdoctor.diagnose import BY_ID, CAUSES, CONSUMERS, SIGNATURES, scan_text
from shmdoctor.diagnose.scan import EXCERPT

DATA = Path(__file__).resolve().parents[2] / "data" / "explain"
CASES = yaml.safe_load((DATA / "cases.yaml").read_text())
TEXT_SIGNATURES = [s.id for s in SIGNATURES if s.anchor]


def _text(case: dict) -> str:
    return (DATA / case["file"]).read_text() if "file" in case else case["text"]


@pytest.mark.parametrize("case", CASES, ids=[f"{i}:{c['source'][:50]}" for i, c in enumerate(CASES)])
def test_case(case):
    found = scan_text(_text(case)).diagnoses()
    assert sorted({d.signature for d in found}) == sorted(case["fires"]), case["source"]
    for d in found:
        assert d.cause == case.get("cause", BY_ID[d.signature].cause)
        assert d.line is not None and len(d.excerpt) <= EXCERPT + 2
        assert "\n" not in d.excerpt
    if "bytes_needed" in case:
        assert {d.bytes_needed for d in found} == {case["bytes_needed"]}


@pytest.mark.parametrize("sig", TEXT_SIGNATURES)
def test_every_signature_has_a_case_that_fires_and_a_near_miss(sig):
    assert any(sig in c["fires"] for c in CASES), f"no case fires {sig}"
    assert any(c.get("near") == sig and not c["fires"] for c in CASES), f"no near-miss for {sig}"


def test_catalogue_is_well_formed():
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids))
    for s in SIGNATURES:
        assert s.cause in CAUSES and s.consumer in CONSUMERS and s.source and s.meaning
        assert all(other in BY_ID for other in s.superseded_by)

    assert all(c["source"].strip() for c in CASES)  # every text says where it comes from
