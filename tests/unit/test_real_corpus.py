"""The real-file corpus (tests/data/real/, each file's source in its README.md): what lint says of each file is what
tests/data/real/expected.yaml wrote of it from the file and the operators' rules before lint ran on it."""

from __future__ import annotations

import pytest
import yaml

from shmdoctor.errors import UsageError
from shmdoctor.fleet import lint
from shmdoctor.sizes import parse_quantity
from shmdoctor.workload import Workload
from tests.helpers import DATA

REAL = DATA / "real"
EXPECTED = yaml.safe_load((REAL / "expected.yaml").read_text())


def _lint(path: str):
    return lint((path,), swarm=None, workload=Workload(), fail_on="error")


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_lint_says_of_each_real_file_what_was_expected_before_it_ran(case):
    path = str(REAL / case["file"])
    try:
        doc = _lint(path)
    except UsageError as e:  # nothing in it to judge (a template, a .pod unit), or bad input: said why, no report
        assert str(e).startswith(path) and case["verdict"] in ("ok", "error") and case["targets"] == 0, str(e)
        return
    assert case["verdict"] != "error", "judged a file expected to be refused"
    names = {r.facts.target.name.split(":", 1)[1]: r for r in doc.reports}
    assert (doc.verdict, len(doc.reports)) == (case["verdict"], case["targets"]), {
        n: (r.verdict, [f.id for f in r.findings]) for n, r in names.items()
    }
    for name, size in (case.get("shm") or {}).items():
        expected = None if size is None else parse_quantity(size.replace("MiB", "Mi"))
        assert names[name].facts.shm.size_bytes == expected, name


def test_the_corpus_has_every_file_with_its_source():
    listed = (REAL / "README.md").read_text()
    files = {c["file"] for c in EXPECTED}
    assert len(files) == len(EXPECTED) >= 40
    for name in files:
        assert (REAL / name).is_file() and f"`{name}`" in listed, name


def test_the_whole_corpus_is_judged_in_one_run():
    doc = _lint(str(REAL))
    refused = sorted(str(REAL / c["file"]) for c in EXPECTED if c["verdict"] == "error")
    assert sorted(e.split(":", 1)[0] for e in doc.errors) == refused
    assert len(doc.reports) >= sum(c["targets"] for c in EXPECTED)
