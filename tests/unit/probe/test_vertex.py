"""Vertex AI: a CustomJob's worker pools (no /dev/shm setting: unknown, with the one thing to check, where the pool
looks like it loads data) and a Model's serving container (sharedMemorySizeMb, 64MB by default); --fix shows
sharedMemorySizeMb and writes nothing. upload-model.json is a models.upload body written for these tests."""

from __future__ import annotations

import json
import shutil

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.fleet import lint
from shmdoctor.sizes import MiB
from tests.helpers import DATA, forked_cli, validate

JOB = DATA / "vertex" / "custom-job.yaml"
MODEL = DATA / "vertex" / "upload-model.json"
REAL = DATA / "real" / "vertex"


def _reports(*paths):
    doc = lint(tuple(str(p) for p in paths), swarm=None)
    return {r.facts.target.name.split(":", 1)[1]: r for r in doc.reports}


def test_each_pool_that_runs_with_the_one_thing_to_check():
    reports = _reports(JOB)
    assert sorted(reports) == ["workerPoolSpecs[0]", "workerPoolSpecs[2]"]  # the empty pool runs nothing
    trainer, server = reports["workerPoolSpecs[0]"], reports["workerPoolSpecs[2]"]
    assert (trainer.facts.shm.size_bytes, trainer.facts.gpus, trainer.facts.form) == (None, "2", "vertex")
    assert trainer.verdict == "warn" and "print `df -h /dev/shm` from the job" in trainer.findings[0].message
    assert (server.verdict, server.findings) == ("ok", ())  # no GPU, no ML sign: its unknown size decides nothing


def test_real_job_config_with_one_pool_as_a_mapping():
    [(name, report)] = _reports(REAL / "vertex-jumpstart-job_config.yaml").items()
    assert name == "workerPoolSpecs[0]" and report.verdict == "warn"  # a pytorch-training image, size unknown
    assert [f.id for f in report.findings] == ["probe-incomplete"]


def test_model_default_and_its_own_size(tmp_path):
    served = _reports(MODEL)["Model/llama-vllm"]
    assert (served.facts.shm.size_bytes, served.facts.shm.source) == (64 * MiB, "runtime-shm")
    assert served.verdict == "fail" and served.facts.server is not None  # vLLM at tensor parallel 2 in 64 MB
    body = json.loads(MODEL.read_text())
    body["model"]["containerSpec"]["sharedMemorySizeMb"] = "4096"
    sized = tmp_path / "model.json"
    sized.write_text(json.dumps(body))
    assert _reports(sized)["Model/llama-vllm"].facts.shm.size_bytes == 4096 * MiB
    body["model"]["containerSpec"]["sharedMemorySizeMb"] = "lots"
    sized.write_text(json.dumps(body))
    with pytest.raises(UsageError, match="sharedMemorySizeMb must be a count of MB"):
        _reports(sized)


def test_fix_is_shown_in_vertex_words_and_not_written(tmp_path):
    path = tmp_path / "model.json"
    shutil.copy(MODEL, path)
    proc = forked_cli("lint", str(path), "--fix")
    assert proc.returncode == 1 and path.read_text() == MODEL.read_text()
    assert "not written (a Vertex AI file is not rewritten" in proc.stderr
    proc = forked_cli("lint", str(path), "--format", "json")
    fix = validate(json.loads(proc.stdout))["reports"][0]["findings"][0]["fixes"][0]
    assert fix["form"] == "vertex" and fix["text"].startswith('containerSpec: {sharedMemorySizeMb: "1024"}')
    assert "--container-shared-memory-size-mb=1024" in fix["text"]


def test_fields_under_their_proto_names_as_the_api_takes_them(tmp_path):
    """RasmusArnmark/mlops_project's custom_job.yaml writes the CustomJob body in proto names (job_spec,
    worker_pool_specs, image_uri): one CPU pool, judged as its JSON-named twin."""
    [(name, report)] = _reports(REAL / "food-classification-custom_job.yaml").items()
    assert (name, report.verdict, report.facts.form) == ("workerPoolSpecs[0]", "ok", "vertex")
    assert report.facts.ml_signs == () and report.facts.gpus is None
    snake = tmp_path / "snake.yaml"
    snake.write_text(
        "worker_pool_specs:\n- machine_spec: {machine_type: a2-highgpu-1g, accelerator_count: 1}\n"
        "  replica_count: 1\n  container_spec: {image_uri: 'us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-0'}\n"
    )
    [pool] = _reports(snake).values()
    assert (pool.facts.gpus, pool.verdict, pool.facts.ml_signs[0]) == ("1", "warn", f"image {_IMAGE}")
    body = json.loads(MODEL.read_text())["model"]
    spec = body.pop("containerSpec")
    body["container_spec"] = {"image_uri": spec["imageUri"], "command": spec["command"], "args": spec["args"]}
    body["container_spec"]["shared_memory_size_mb"] = "4096"
    model = tmp_path / "model.json"
    model.write_text(json.dumps({"model": body}))
    served = _reports(model)["Model/llama-vllm"]
    assert (served.facts.shm.size_bytes, served.facts.server is not None) == (4096 * MiB, True)


_IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-0"
