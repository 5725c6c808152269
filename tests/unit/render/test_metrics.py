"""The metrics renderer on captured inspect JSON: every series, its labels, and what never gets into a label."""

from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from shmdoctor.exporter.model import LABEL_MAX, Labels, Scrape, Target, bounded
from shmdoctor.loader import loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm
from shmdoctor.model import Target as Of
from shmdoctor.probe import docker
from shmdoctor.render import metrics
from shmdoctor.rules import judge
from tests.helpers import DATA

INSPECT = DATA / "inspect"
MiB = 2**20


def _inspect(name: str) -> dict:
    return json.loads((INSPECT / f"{name}.json").read_text())


def _target(name: str, usage=None, need=None, leaked=None) -> Target:
    info = _inspect(name)
    probed = docker.facts_from_inspect(info)
    if usage:
        probed = docker.with_usage(probed, usage, "from the host")
    facts = probed.facts
    labels = Labels(facts.target.name, facts.target.id, probed.image or "", facts.ipc.mode, facts.shm.source)
    return Target(judge(facts, need), labels, leaked)


def _samples(text: bytes) -> dict[str, list]:
    found: dict[str, list] = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            found.setdefault(s.name, []).append((s.labels, s.value))
    return found


def _scrape(*targets: Target, errors=(), engine_up=True) -> Scrape:
    return Scrape(tuple(targets), 0.0123, tuple(errors), len(errors), engine_up, skipped=0)


def test_a_full_default_container_gives_every_series_with_its_five_labels():
    # The captured default container (64 MiB), 61 MiB of it in use as read from the host
    target = _target("default", usage=(64 * MiB, 61 * MiB, 3 * MiB), leaked=8192)
    got = _samples(metrics.render(_scrape(target)))
    info = _inspect("default")
    labels = {
        "container": info["Name"].lstrip("/"),
        "container_id": info["Id"],
        "image": info["Config"]["Image"],
        "ipc_mode": "private",
        "source": "docker-shm",
    }
    assert got["shmdoctor_shm_size_bytes"] == [(labels, 64 * MiB)]
    assert got["shmdoctor_shm_used_bytes"] == [(labels, 61 * MiB)]
    assert got["shmdoctor_leaked_bytes"] == [(labels, 8192)]
    assert got["shmdoctor_oom_killed"] == [(labels, 0)]
    assert "shmdoctor_memory_limit_bytes" not in got  # no limit: no sample, never a 0 that reads as one
    assert "shmdoctor_need_bytes" not in got  # no loader given
    findings = {(lab["id"], lab["severity"]) for lab, v in got["shmdoctor_finding"] if v == 1}
    assert findings == {("shm-full", "warning")}  # not default-shm: the captured container is no training job
    assert got["shmdoctor_scrape_duration_seconds"] == [({}, 0.0123)]
    assert got["shmdoctor_scrape_errors_total"] == [({}, 0)]
    assert got["shmdoctor_engine_up"] == [({}, 1)]


def test_need_memory_limit_and_oom_from_their_containers():
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    memory, oom = _target("memory", need=need), _target("oom")
    got = _samples(metrics.render(_scrape(memory, oom)))
    limits = {lab["container"]: v for lab, v in got["shmdoctor_memory_limit_bytes"]}
    assert limits[memory.labels.container] == _inspect("memory")["HostConfig"]["Memory"]
    needs = {lab["container"]: v for lab, v in got["shmdoctor_need_bytes"]}
    assert needs == {memory.labels.container: 900 * MiB}  # (2·4 + 1) × 100 MiB
    ooms = {lab["container"]: v for lab, v in got["shmdoctor_oom_killed"]}
    assert ooms == {memory.labels.container: 0, oom.labels.container: 1}
    ids = {(lab["container"], lab["id"]) for lab, _ in got["shmdoctor_finding"]}
    assert (oom.labels.container, "oom-killed") in ids


def test_the_engine_away_is_errors_and_engine_up_0_not_a_missing_page():
    got = _samples(metrics.render(_scrape(errors=("the Docker engine at unix:///x went away",), engine_up=False)))
    assert got["shmdoctor_engine_up"] == [({}, 0)]
    assert got["shmdoctor_scrape_errors_total"] == [({}, 1)]
    assert got["shmdoctor_targets"] == [({}, 0)]


def test_no_engine_no_engine_up_series():
    assert "shmdoctor_engine_up" not in _samples(metrics.render(_scrape(engine_up=None)))


def test_no_environment_value_reaches_the_metrics():
    info = _inspect("default")
    secrets = [e.split("=", 1)[1] for e in info["Config"]["Env"]]
    text = metrics.render(_scrape(_target("default"), _target("gpu"), _target("memory"))).decode()
    assert secrets and not any(s in text for s in secrets)
    assert "SECRET_TOKEN" not in text


def test_label_values_are_bounded():
    long = "x" * 10_000
    target = _target("default")
    big = Target(target.report, Labels(long, long, long, "private", "docker-shm"))
    got = _samples(metrics.render(_scrape(big)))
    (labels, _), *_ = got["shmdoctor_shm_size_bytes"]
    assert all(len(v) <= LABEL_MAX for v in labels.values())
    assert labels["container"].startswith("x" * 100)


@pytest.mark.parametrize(
    "value, label",
    [
        ("x" * 128, "x" * 128),  # docs/commands/exporter.md: a label value is at most 128 characters
        ("x" * 129, "x" * 127 + "…"),
        ("\x1b" * 32, "\\x1b" * 32),  # 32 ESCs are 128 characters written out
        ("\x1b" * 33, "\\x1b" * 31 + "\\x1…"),
    ],
)
def test_a_label_value_is_cut_at_128_characters_with_its_control_characters_written_out(value, label):
    assert bounded(value) == label


@pytest.mark.parametrize("name", sorted(p.stem for p in INSPECT.glob("*.json")))
def test_every_captured_container_renders_and_parses(name):
    text = metrics.render(_scrape(_target(name)))
    assert _samples(text)["shmdoctor_targets"] == [({}, 1)]


# The exported names and types are the exporter's contract with dashboards and alerts (examples/prometheus/): written
# here, not read from the code, so that a renamed metric fails.
EXPORTED = {
    "shmdoctor_shm_size_bytes": "gauge",
    "shmdoctor_shm_used_bytes": "gauge",
    "shmdoctor_memory_limit_bytes": "gauge",
    "shmdoctor_need_bytes": "gauge",
    "shmdoctor_finding": "gauge",
    "shmdoctor_leaked_bytes": "gauge",
    "shmdoctor_oom_killed": "gauge",
    "shmdoctor_scrape_duration_seconds": "gauge",
    "shmdoctor_scrape_errors": "counter",  # its sample is shmdoctor_scrape_errors_total
    "shmdoctor_targets": "gauge",
    "shmdoctor_targets_skipped": "gauge",
    "shmdoctor_engine_up": "gauge",
}


def test_every_exported_family_by_name_and_type_and_the_skipped_targets_count():
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    target = _target("memory", usage=(64 * MiB, 1 * MiB, 63 * MiB), need=need, leaked=0)
    scrape = Scrape((target,), 0.5, (), 3, True, skipped=7)
    text = metrics.render(scrape).decode()
    types = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert types == EXPORTED
    got = _samples(metrics.render(scrape))
    assert got["shmdoctor_targets_skipped"] == [({}, 7)]
    assert got["shmdoctor_targets"] == [({}, 1)]
    assert got["shmdoctor_scrape_errors_total"] == [({}, 3)]
    assert got["shmdoctor_scrape_duration_seconds"] == [({}, 0.5)]
    assert [v for _, v in got["shmdoctor_leaked_bytes"]] == [0]  # read as nothing leaked: a sample of 0
    assert "# HELP shmdoctor_targets_skipped Targets past --max-targets" in text


def test_the_hosts_own_dev_shm_has_no_oom_series():
    """oom_killed is the engine's word about a container: the host itself (--source proc) has none to give."""
    facts = Facts(Of("local", "host"), Shm(True, 64 * MiB, 0, 64 * MiB, "system"), Ipc("host"), Memory(None, None))
    host = Target(judge(facts, None), Labels("", "", "", "host", "system"))
    got = _samples(metrics.render(_scrape(host, _target("oom"))))
    assert [lab["container"] for lab, _ in got["shmdoctor_oom_killed"]] == [_inspect("oom")["Name"].lstrip("/")]
    assert [lab["container"] for lab, _ in got["shmdoctor_shm_size_bytes"]][0] == ""


def test_control_characters_of_a_label_value_are_written_out_not_sent():
    """An engine's name or image with ESC, BEL, a NUL or a C1 byte: on a terminal showing the page (curl) an ESC
    sequence would act; each is written out as \\xNN, a backslash Prometheus reads back as one."""
    target = _target("default")
    hostile = "\x1b]0;owned\x07red\x1b[31m\x00\x9b\x7f"
    text = metrics.render(_scrape(Target(target.report, Labels(hostile, "id", hostile, "private", "docker-shm"))))
    assert not any(ord(c) < 0x20 and c != "\n" or 0x7F <= ord(c) < 0xA0 for c in text.decode()), text
    (labels, _), *_ = _samples(text)["shmdoctor_shm_size_bytes"]
    assert labels["container"] == labels["image"] == "\\x1b]0;owned\\x07red\\x1b[31m\\x00\\x9b\\x7f"
