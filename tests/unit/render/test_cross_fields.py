"""What a schema validator cannot see: one field of a document against another (issue 39 item 3). SARIF's
rules[ruleIndex].id is the result's ruleId; lint's JSON verdicts are what its own findings make them, and its exit
code what its verdict says; the metrics page's # HELP and # TYPE name the series served under them, each sample of
the type its # TYPE says. Each oracle is written here from the format's own definition (SARIF 2.1.0 §3.27.6,
docs/json.md's verdicts, Prometheus' text exposition format), never from the code under test."""

from __future__ import annotations

import json
import re

import pytest

from shmdoctor.exporter.model import Labels, Scrape, Target
from shmdoctor.loader import loader_config, requirement
from shmdoctor.probe import docker
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.render import metrics, render
from shmdoctor.rules import judge
from shmdoctor.shm.sampling import Sampler
from tests.helpers import DATA, forked_cli, valid_sarif, validate

CORPORA = ("examples/", "tests/data/manifests", "tests/data/platforms")
LOADER = ("--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB")
IGNORED = ("--ignore", "ipc-host")  # suppressed findings too: listed, marked, counting for nothing
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


@pytest.fixture(scope="module")
def linted(tmp_path_factory) -> dict:
    """{format: (exit code, document)} of one lint of the corpora and of a file it cannot judge."""
    broken = tmp_path_factory.mktemp("broken") / "compose.yml"
    broken.write_text("services:\n  train: [\n")
    out = {}
    for fmt in ("sarif", "json"):
        proc = forked_cli("lint", *CORPORA, str(broken), *LOADER, *IGNORED, "--format", fmt)
        assert proc.returncode == 2, proc.stderr
        out[fmt] = (proc.returncode, valid_sarif(proc.stdout) if fmt == "sarif" else validate(json.loads(proc.stdout)))
    return out


def test_each_sarif_results_rule_index_points_at_its_rule(linted):
    run = linted["sarif"][1]["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert len({r["id"] for r in rules}) == len(rules)  # an index names one rule
    results = run["results"]
    assert len({r["ruleId"] for r in results}) >= 4 and len({r["ruleIndex"] for r in results}) >= 4
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"], result


def test_sarif_results_are_the_json_findings_with_their_suppressions(linted):
    doc = linted["json"][1]
    findings = [f for r in doc["reports"] for f in r["findings"]]
    results = linted["sarif"][1]["runs"][0]["results"]
    assert [(r["ruleId"], r["level"], bool(r.get("suppressions"))) for r in results] == [
        (f["id"], LEVEL[f["severity"]], f["suppressed"] is not None) for f in findings
    ]
    assert any(f["suppressed"] for f in findings) and not all(f["suppressed"] for f in findings)


def verdict(findings: list[dict]) -> str:
    """docs/json.md: fail at an active finding of --fail-on's severity (error by default) or worse, warn at a
    warning, else ok; a suppressed finding counts for nothing."""
    severities = {f["severity"] for f in findings if f["suppressed"] is None}
    return "fail" if "error" in severities else "warn" if "warning" in severities else "ok"


def test_lint_json_verdicts_and_exit_code_follow_from_its_own_findings(linted):
    code, doc = linted["json"]
    said = [r["verdict"] for r in doc["reports"]]
    assert said == [verdict(r["findings"]) for r in doc["reports"]]
    assert {"fail", "warn", "ok"} <= set(said)
    worst = "fail" if "fail" in said else "warn" if "warn" in said else "ok"
    assert doc["verdict"] == worst
    assert code == (2 if doc["errors"] else 1 if worst == "fail" else 0)
    assert doc["errors"] and all(isinstance(e, str) and e for e in doc["errors"])


def scraped() -> str:
    targets = []
    for name in ("default", "memory", "gpu"):
        probed = docker.facts_from_inspect(json.loads((DATA / "inspect" / f"{name}.json").read_text()))
        probed = docker.with_usage(probed, (64 * 2**20, 2**20, 63 * 2**20), "from the host")
        facts = probed.facts
        need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
        labels = Labels(facts.target.name, facts.target.id, probed.image or "", facts.ipc.mode, facts.shm.source)
        targets.append(Target(judge(facts, need), labels, 4096))
    return metrics.render(Scrape(tuple(targets), 0.25, ("engine slow",), 2, True, skipped=1)).decode()


def test_every_metric_served_is_under_its_own_help_and_type():
    text = scraped()
    helps: dict[str, str] = {}
    types: dict[str, str] = {}
    served: list[str] = []
    for line in text.splitlines():
        if m := re.fullmatch(r"# HELP (\w+) (.+)", line):
            assert m.group(1) not in helps, line  # one HELP a family
            helps[m.group(1)] = m.group(2)
        elif m := re.fullmatch(r"# TYPE (\w+) (\w+)", line):
            assert m.group(1) in helps and m.group(1) not in types, line  # after its HELP, once
            types[m.group(1)] = m.group(2)
        else:
            name = re.match(r"\w+", line).group()  # type: ignore[union-attr]
            assert types and name == list(types)[-1], line  # under its own family's lines (format 0.0.4: one name)
            served.append(name)
    assert set(helps) == set(types) == set(served)  # no family without a series here, no series without a family
    # Prometheus' naming: a counter's name ends in _total, and nothing else's does
    assert {f for f, t in types.items() if t == "counter"} == {f for f in types if f.endswith("_total")}
    assert "shmdoctor_scrape_errors_total 2.0" in text and types["shmdoctor_scrape_errors_total"] == "counter"
    assert types["shmdoctor_shm_size_bytes"] == "gauge" and "shmdoctor_targets_skipped 1.0" in text


def test_watch_json_summary_adds_up_its_own_samples(tmp_path):
    """docs/json.md's watch: the summary counts the samples and the scans printed before it, its peak is the most
    any sample used (at the first such sample's t; each sample's peak the most so far), its start the first
    sample's use, each holder in it the biggest hold any scan printed of its pid, each consumer its biggest use."""
    page, mib, sampler = 4096, 2**20, Sampler(str(tmp_path), holders_every=1.0, budget=64 * 2**20)
    seg = lambda inode, name, n: Segment(inode, name, n * page, inode % 2 == 0)  # noqa: E731
    scans = {
        1.0: (Holder(7, "train", (seg(1, "torch_7_1_1", 3), seg(2, "nccl-Ab12Cd", 2))),),
        2.5: (Holder(7, "train", (seg(1, "torch_7_1_1", 3),)), Holder(9, "w", (seg(3, "torch_9_1_1", 5),))),
        4.0: (Holder(9, "w", (seg(1, "torch_7_1_1", 3), seg(4, "sem.mp-abcd1234", 1))),),
    }
    readings = [(0.0, 10), (0.5, 40), (1.0, 90), (2.0, 90), (2.5, 70), (3.0, 20), (4.0, 90), (5.0, 5)]
    printed = [
        render(sampler.record(t, 512 * mib, used * mib, Holders(scans[t]) if t in scans else None), "json")
        for t, used in readings
    ]
    printed.append(render(sampler.summary(6.0), "json"))
    *samples, summary = [validate(json.loads(line)) for line in printed]
    used = [s["used_bytes"] for s in samples]
    assert summary["samples"] == len(samples) and summary["holder_scans"] == sum("holders" in s for s in samples)
    assert [s["peak_bytes"] for s in samples] == [max(used[: i + 1]) for i in range(len(used))]
    assert summary["peak_bytes"] == max(used) and summary["peak_t"] == samples[used.index(max(used))]["t"]
    assert summary["start_used_bytes"] == used[0]
    held = [h for s in samples for h in s.get("holders", [])]
    assert {h["pid"]: h["bytes"] for h in summary["holders"]} == {
        pid: max(h["bytes"] for h in held if h["pid"] == pid) for pid in {h["pid"] for h in held}
    }
    assert [h["bytes"] for h in summary["holders"]] == sorted((h["bytes"] for h in summary["holders"]), reverse=True)
    assert all(h["unlinked_count"] <= h["segments"] for h in held + summary["holders"])
    uses = [s["consumers"] for s in samples if "consumers" in s]
    assert summary["consumers"] == {term: max(u.get(term, 0) for u in uses) for term in {t for u in uses for t in u}}
    assert summary["peak_over_budget"] is True  # 90 MiB used of a budget of 64: more than any slack of pages
