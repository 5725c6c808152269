"""--format junit (lint, audit): one test case a workload, failed at --fail-on, skipped where an ignore kept it from
failing, an error for a file that could not be judged; every document valid against Jenkins' junit-10.xsd
(tests/data/junit/junit-10.xsd names its source), read with xmlschema (the test extra)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import xmlschema

from shmdoctor.fleet import judge_labelled
from shmdoctor.loader import LoaderSpec
from shmdoctor.probe import docker
from shmdoctor.render import render
from shmdoctor.reports import Audit
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Workload
from tests.helpers import DATA, forked_cli

SCHEMA = xmlschema.XMLSchema(str(DATA / "junit" / "junit-10.xsd"))


def junit(*args: str, code: int) -> ET.Element:
    proc = forked_cli("lint", *args, "--format", "junit")
    assert proc.returncode == code, proc.stderr
    SCHEMA.validate(proc.stdout)  # raises with what is wrong
    return ET.fromstring(proc.stdout)


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", "").rsplit(":", 1)[-1]: case for case in root.iter("testcase")}


def test_a_case_a_workload_failed_at_fail_on_and_skipped_where_ignored():
    """tests/data/suppress: the two plain trainers on 64 MiB warn (default-shm), the four others are silenced by
    their comment or label. At --fail-on warning the plain ones fail, the silenced ones are skipped, saying by what."""
    root = junit(str(DATA / "suppress"), "--fail-on", "warning", code=1)
    (suite,) = root.iter("testsuite")
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == dict(
        tests="6", failures="2", errors="0", skipped="4"
    )
    by_name = cases(root)
    for name in ("plain", "Job/plain"):
        (failure,) = by_name[name].iter("failure")
        assert failure.get("type") == "default-shm" and "default 64 MiB" in (failure.text or "")
    skipped = by_name["labelled"].find("skipped")
    assert skipped is not None and skipped.get("message") == "default-shm ignored by its shmdoctor.ignore label"
    assert by_name["commented"].find("failure") is None
    assert by_name["plain"].get("classname", "").endswith("suppress/compose.yml")


def test_below_the_threshold_a_case_passes_with_its_findings_said():
    """At the default --fail-on error the same warnings pass: no failure, no skip, the finding in system-out."""
    root = junit(str(DATA / "suppress" / "compose.yml"), code=0)
    plain = cases(root)["plain"]
    assert plain.find("failure") is None and plain.find("skipped") is None
    out = plain.find("system-out")
    assert out is not None and (out.text or "").startswith("warning default-shm: ")


def test_a_file_that_could_not_be_judged_is_an_error_case(tmp_path):
    (tmp_path / "good.yml").write_text((DATA / "suppress" / "compose.yml").read_text())
    (tmp_path / "bad.yml").write_text("services:\n  a:\n    image: x\n    shm_size: lots\n")
    root = junit(str(tmp_path), code=2)
    errors = [case for case in root.iter("testcase") if case.find("error") is not None]
    assert len(errors) == 1 and "bad.yml" in errors[0].get("name", "")
    assert root.get("errors") == "1" and root.get("tests") == "4"


def test_hostile_names_stay_valid_xml(tmp_path):
    """Control characters (which XML 1.0 cannot hold even as references), '<', '&' and quotes in a service's name
    and a folder's: written out, the document still valid."""
    folder = tmp_path / 'a<b>&"c\x01'
    folder.mkdir()
    (folder / "compose.yml").write_text(
        'services:\n  "x\\u0007y<&>\\uffff":\n    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\n'
    )
    root = junit(str(folder / "compose.yml"), "--fail-on", "warning", code=1)
    (case,) = root.iter("testcase")
    name = case.get("name", "")
    assert "\\x07" in name and "<&>" in name and "\\uffff" in name and "\\x01" in case.get("classname", "")


def test_audit_names_each_container_under_its_engine():
    """A captured `docker inspect` of a container on the default 64 MiB, judged against the seed's loader (9 batches
    of 100 MiB: shm-too-small, an error): its case fails, named by the container, classed under the engine."""
    inspect = json.loads((DATA / "inspect" / "default.json").read_text())
    facts = docker.facts_from_inspect(inspect, host_shm=23 * GiB).facts
    report = judge_labelled(facts, Workload(LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB)), None, "error")
    text = render(Audit((report,), engine="unix:///var/run/docker.sock"), "junit")
    SCHEMA.validate(text)
    (case,) = ET.fromstring(text).iter("testcase")
    assert case.get("name") == "sdt-audit-cap-default" and case.get("classname") == "audit unix:///var/run/docker.sock"
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "shm-too-small"
