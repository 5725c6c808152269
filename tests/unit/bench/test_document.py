"""bench's JSON document against its JSON Schema (render/schemas/bench.json, $id shmdoctor/bench/1), and through the
one output layer: every status a result can have, a recommendation, the findings of bench's rules."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema

from shmdoctor.bench.document import BenchDocument, document
from shmdoctor.bench.model import Config, Result
from shmdoctor.bench.sweep import recommend
from shmdoctor.bench.workload import BenchWorkload
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.render import render, schema_file
from shmdoctor.rules_bench import judge_bench
from shmdoctor.sizes import MiB

WORK = BenchWorkload(batch_size=100, batch_bytes=100 * MiB, sample_bytes=MiB, step_time=0.2, device="cuda:0")
FACTS = Facts(
    target=Target("local", "this machine"),
    shm=Shm(present=True, size_bytes=1024 * MiB, used_bytes=0, free_bytes=1024 * MiB, source="docker-shm"),
    ipc=Ipc(mode="private"),
    memory=Memory(limit_bytes=None, used_bytes=None),
    runtime="docker",
)
DEVICE = {"name": "cuda:0", "torch": "2.11.0", "sharing_strategy": "file_descriptor", "model": "NVIDIA H200"}


def results() -> list[Result]:
    def ok(w, t, wait, **kw):
        return Result(
            Config(w, 2 if w else None, True, True),
            "ok",
            (2 * w) * 100 * MiB,
            batch_seconds=t,
            data_wait_seconds=wait,
            h2d_seconds=0.0021,
            batch_bytes=100 * MiB,
            **kw,
        )

    return [
        ok(8, 0.207, 0.0, h2d_pinned_bytes_per_second=54.6e9),
        ok(3, 0.203, 0.0),
        ok(2, 0.290, 0.09),
        Result(Config(6, 2, True, True), "shm-exhausted", 1200 * MiB, message="No space left on device (28)"),
        Result(Config(1, 2, True, True), "out-of-memory", 200 * MiB, message="killed by SIGKILL"),
        Result(Config(4, 2, True, True), "error", 800 * MiB, message="ValueError: bad sample"),
        Result(Config(5, 2, True, True), "skipped", 1000 * MiB, message="searched: num_workers=3 is the fewest"),
    ]


def test_the_document_is_valid_against_its_schema_and_renders_through_the_layer(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    rs = results()
    body = document(WORK, rs, recommend(rs, 1024 * MiB), judge_bench(WORK, rs, FACTS), FACTS, DEVICE)
    jsonschema.validate(body, json.loads(schema_file("shmdoctor/bench/1").read_text()))
    doc = BenchDocument(body)
    assert json.loads(render(doc, "json")) == body and body["schema"] == "shmdoctor/bench/1"
    text = render(doc, "text")
    assert text.startswith("RECOMMEND  num_workers=3")
    assert "transfer floor: pinned host→device 54.6 GB/s" in text and "skipped num_workers=5: searched" in text
    assert {f["id"] for f in body["findings"]} == {"bench-shm-exhausted", "bench-out-of-memory", "bench-error"}


def test_a_config_passing_pin_memory_device_is_in_the_document_with_what_torch_did_with_it(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    rs = results()
    three = rs[1]
    given = replace(three, config=replace(three.config, pin_memory_device="cuda"), pin_memory_device_ignored=True)
    rs.append(given)
    body = document(WORK, rs, recommend(rs, 1024 * MiB), [], FACTS, DEVICE)
    jsonschema.validate(body, json.loads(schema_file("shmdoctor/bench/1").read_text()))
    row = body["results"][-1]
    assert row["pin_memory_device"] == "cuda" and row["pin_memory_device_ignored"] is True
    assert body["results"][1]["pin_memory_device"] is None and body["results"][1]["pin_memory_device_ignored"] is None
    assert body["recommendation"]["pin_memory_device"] is None  # as fast without it: it is left out
    assert Config.of(row) == given.config
    assert "torch 2.11.0 ignores it" in render(BenchDocument(body), "text")
