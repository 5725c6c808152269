"""--format sarif: SARIF 2.1.0 that OASIS's schema and a SARIF model accept, that sarif-tools reads back with the
counts the text and the JSON give, each result at the file and line of its workload (a placeholder that says so where
there is no file), each rule described with a link to its anchor on the rules page (docs/rules.md)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import tomllib
from sarif import loader as sarif_loader

from shmdoctor.fleet import judge_labelled
from shmdoctor.loader import LoaderSpec
from shmdoctor.probe import docker
from shmdoctor.render import render
from shmdoctor.reports import Audit
from shmdoctor.rules import catalogue
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Workload
from tests.helpers import DATA, REPO, forked_cli, valid_sarif, validate

LEVEL = {"error": "error", "warning": "warning", "info": "note"}  # SARIF's names for the severities
LOADER = ("--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB")


def lint(*args: str) -> tuple[dict, dict, str]:
    """(SARIF, JSON, text) of one lint of args, each from its own run of the CLI."""
    out = {}
    for fmt in ("sarif", "json", "text"):
        proc = forked_cli("lint", *args, "--format", fmt)
        assert proc.returncode in (0, 1, 2), proc.stderr  # 2: tests/data/real holds a script lint refuses
        out[fmt] = proc.stdout
    return valid_sarif(out["sarif"]), validate(json.loads(out["json"])), out["text"]


def tools_summary(doc: dict, tmp_path: Path) -> dict[str, int]:
    """sarif-tools' `sarif summary` of the document: {level: count}."""
    path = tmp_path / "shmdoctor.sarif"
    path.write_text(json.dumps(doc))
    sarif = Path(sys.executable).parent / "sarif"
    proc = subprocess.run([sarif, "summary", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    counts = dict(re.findall(r"^(error|warning|note): (\d+)$", proc.stdout, re.M))
    assert set(counts) == {"error", "warning", "note"}, proc.stdout
    assert sarif_loader.load_sarif_file(str(path)).get_result_count() == sum(map(int, counts.values()))
    return {level: int(n) for level, n in counts.items()}


@pytest.mark.parametrize(
    "args",
    [("examples/",), ("tests/data/manifests", "tests/data/real", "tests/data/platforms"), ("examples/", *LOADER)],
    ids=["examples", "manifests-real-platforms", "examples-seed-loader"],
)
def test_lint_sarif_is_valid_and_read_back_with_the_counts_of_the_text_and_the_json(args, tmp_path):
    sarif, doc, text = lint(*args)
    findings = [f for r in doc["reports"] for f in r["findings"]]
    by_level = Counter(LEVEL[f["severity"]] for f in findings)
    assert tools_summary(sarif, tmp_path) == {level: by_level[level] for level in ("error", "warning", "note")}
    said = Counter(re.findall(r"^  \S+: (error|warning) [a-z-]+: ", text, re.M))  # the text lists errors, warnings
    assert (said["error"], said["warning"]) == (by_level["error"], by_level["warning"])
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [(f["id"], LEVEL[f["severity"]]) for f in findings]
    assert all(r["message"]["text"].startswith(f["message"]) for r, f in zip(results, findings))


def test_a_populated_lint_has_results_of_every_level():
    """The corpus above is not vacuous: real files give errors, warnings and notes."""
    sarif, _, _ = lint("tests/data/manifests", "tests/data/real", "tests/data/platforms")
    levels = Counter(r["level"] for r in sarif["runs"][0]["results"])
    assert levels["error"] >= 1 and levels["warning"] >= 10 and levels["note"] >= 1, levels


COMPOSE = """\
# line 1
services:
  web:
    image: nginx
  trainer:
    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
    command: ["torchrun", "train.py"]
"""
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
    - name: loader
      image: my-training-image:latest
    - name: sidecar
      image: busybox
"""


def _locations(sarif: dict) -> list[tuple[str, int, str]]:
    out = []
    for result in sarif["runs"][0]["results"]:
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        (logical,) = location["logicalLocations"]
        out.append((physical["artifactLocation"]["uri"], physical["region"]["startLine"], logical["name"]))
    return out


def test_each_result_is_at_its_workloads_file_and_line(tmp_path):
    (tmp_path / "docker-compose.yml").write_text(COMPOSE)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "pod.yaml").write_text(POD)
    proc = forked_cli(
        "lint", "docker-compose.yml", "k8s", *LOADER, "--workload", "*", "--format", "sarif", cwd=tmp_path
    )
    assert proc.returncode == 1, proc.stderr
    # a compose service starts on its first key (line 4: web's image, line 6: trainer's); a container on `- name:`
    assert set(_locations(valid_sarif(proc.stdout))) == {
        ("docker-compose.yml", 4, "docker-compose.yml:web"),
        ("docker-compose.yml", 6, "docker-compose.yml:trainer"),
        ("k8s/pod.yaml", 7, "k8s/pod.yaml:Pod/trainer/loader"),
        ("k8s/pod.yaml", 9, "k8s/pod.yaml:Pod/trainer/sidecar"),
    }


def test_json_keeps_no_lines_so_its_results_are_on_line_1_and_stdin_is_a_placeholder():
    ecs = "tests/data/real/ecs-fargate-remote-browser.json"
    sarif, doc, _ = lint(ecs)
    assert {(uri, line) for uri, line, _ in _locations(sarif)} == {(ecs, 1)}
    assert all(r["target"]["file"] == ecs and r["target"]["line"] is None for r in doc["reports"])
    proc = forked_cli("lint", "-", *LOADER, "--workload", "*", "--format", "sarif", input_text=COMPOSE)
    assert proc.returncode == 1, proc.stderr
    sarif = valid_sarif(proc.stdout)
    assert {(uri, line) for uri, line, _ in _locations(sarif)} == {("shmdoctor-stdin", 4), ("shmdoctor-stdin", 6)}
    artifact = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert "no file" in artifact["description"]["text"] and "stdin" in artifact["description"]["text"]


def test_the_message_carries_the_fix_with_its_number():
    proc = forked_cli("lint", "-", *LOADER, "--workload", "*", "--format", "sarif", input_text=COMPOSE)
    message = valid_sarif(proc.stdout)["runs"][0]["results"][0]["message"]["text"]
    # 900 MiB needed ((2·4 + 1) batches of 100 MiB) + 25%, rounded up: 1.5 GiB
    assert (
        "needs 900 MiB" in message and 'Fix: give /dev/shm 1.5 GiB: 900 MiB needed + 25% (shm_size: "1536m")' in message
    )
    assert "(DataLoader(batch_size=5, ...))" in message  # the loader settings that fit today, said as settings


def test_audit_sarif_names_the_container_on_a_placeholder_artifact():
    """audit's containers have no file: a placeholder that says so, the container as the logical location
    (captured `docker inspect` of a container with the default 64 MiB, judged against the seed's loader)."""
    inspect = json.loads((DATA / "inspect" / "default.json").read_text())
    facts = docker.facts_from_inspect(inspect, host_shm=23 * GiB).facts
    spec = LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB)
    report = judge_labelled(facts, Workload(spec), None, "error")
    doc = Audit((report,), engine="unix:///var/run/docker.sock")
    sarif = valid_sarif(render(doc, "sarif"))
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "shm-too-small"]
    location = result["locations"][0]
    artifact = location["physicalLocation"]["artifactLocation"]
    assert artifact["uri"] == "shmdoctor-container-engine"
    said = artifact["description"]["text"]
    assert "no file" in said and "unix:///var/run/docker.sock" in said
    assert location["logicalLocations"][0]["name"] == "sdt-audit-cap-default" == facts.target.name
    assert location["physicalLocation"]["region"]["startLine"] == 1


def test_the_driver_names_every_rule_with_its_anchor_on_the_rules_page():
    sarif = valid_sarif(forked_cli("lint", "examples/", "--format", "sarif").stdout)
    driver = sarif["runs"][0]["tool"]["driver"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert (driver["name"], driver["version"]) == ("shmdoctor", project["version"])
    assert driver["informationUri"] == project["urls"]["Homepage"]
    assert [r["id"] for r in driver["rules"]] == [r.id for r in catalogue()]
    # the manual's home is docs/index.md of the repository: the rules page is docs/rules.md beside it
    manual = project["urls"]["Documentation"]
    assert manual.endswith("/docs/index.md")
    rules_page = (REPO / "docs" / "rules.md").read_text()
    for rule, descriptor in zip(catalogue(), driver["rules"]):
        assert descriptor["helpUri"] == f"{manual.removesuffix('index.md')}rules.md#rule-{rule.id}"
        assert f'<a id="rule-{rule.id}"></a>' in rules_page, rule.id
        assert descriptor["defaultConfiguration"]["level"] == LEVEL[rule.severity]
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"] and descriptor["help"]["text"]


def test_a_file_that_could_not_be_judged_is_a_failed_execution_notification(tmp_path):
    (tmp_path / "bad.yml").write_text("services:\n  trainer:\n    image: x\n    shm_size: plenty\n")
    (tmp_path / "good.yml").write_text("services:\n  web:\n    image: x\n")
    proc = forked_cli("lint", str(tmp_path), "--format", "sarif")
    assert proc.returncode == 2
    [invocation] = valid_sarif(proc.stdout)["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and note["message"]["text"].startswith(f"{tmp_path}/bad.yml:3: service 'trainer'")


def test_a_compose_set_finding_is_at_the_file_that_set_the_value_with_the_others_related():
    """tests/data/compose-sets/pair: serve's 64m is the override's (line 7); the base's definition is related."""
    sarif, _, _ = lint("tests/data/compose-sets/pair", *LOADER)
    [result] = [r for r in sarif["runs"][0]["results"] if "serve" in r["locations"][0]["logicalLocations"][0]["name"]]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "tests/data/compose-sets/pair/compose.override.yaml"},
        "region": {"startLine": 7},
    }
    [related] = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "tests/data/compose-sets/pair/compose.yaml"
    assert related["physicalLocation"]["region"]["startLine"] == 11 and "serve" in related["message"]["text"]
