"""Nomad job files -> Facts of each docker task: shm_size in bytes, ipc_mode, memory in MB, GPU devices; other
drivers passed over; a job template said to be one; --fix shows the change, never writes the HCL."""

from __future__ import annotations

import json
import shutil

import pytest

from shmdoctor.probe import nomad
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, assert_one_line_error, forked_cli, validate

JOB = DATA / "iac" / "train.nomad"
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB


def test_docker_task_as_the_container_the_driver_starts():
    found, passed_over = nomad.read(JOB.read_text(), "train.nomad")
    [task] = found
    facts = task.facts
    assert facts.target.name == "train.nomad:train/gpu/trainer" and facts.target.line == 5
    assert (facts.shm.size_bytes, facts.memory.limit_bytes, facts.gpus) == (2 * GiB, 16 * GiB, "2")
    assert facts.ml_signs and facts.form == "nomad"
    assert passed_over == ["train.nomad: train/gpu/side: driver exec, not docker: not judged"]


@pytest.mark.parametrize(
    "config, size, source, unknown",
    [
        ('image = "pytorch/pytorch"', 64 * MiB, "docker-shm", None),  # the Docker daemon's default
        ('image = "x"\n ipc_mode = "host"', None, "host-ipc", "the Nomad client's /dev/shm"),
        ('image = "x"\n shm_size = var.shm', None, "docker-shm", "shm_size is var.shm"),
    ],
)
def test_shm_of_a_task(config, size, source, unknown):
    text = f'job "j" {{\n group "g" {{\n task "t" {{\n driver = "docker"\n config {{\n {config}\n }}\n }}\n }}\n}}\n'
    [task], _ = nomad.read(text, "j.nomad")
    assert (task.facts.shm.size_bytes, task.facts.shm.source) == (size, source)
    assert any(unknown in u for u in task.facts.unreadable) if unknown else not task.facts.unreadable


def test_a_job_template_is_said_in_one_line(tmp_path):
    path = tmp_path / "job.nomad"
    path.write_text('job "[[ .name ]]" {\n  group "g" {}\n}\n')
    proc = forked_cli("lint", str(path))
    assert_one_line_error(proc, 2, "job.nomad:1: a Nomad job template ([[ .name ]]): render it first")


def test_malformed_hcl_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "job.nomad.hcl"
    path.write_text('job "j" {\n  group "g" {\n')
    assert_one_line_error(forked_cli("lint", str(path)), 2, "not HCL")


def test_fix_is_shown_in_bytes_and_not_written(tmp_path):
    path = tmp_path / "train.nomad"
    shutil.copy(JOB, path)
    text = path.read_text().replace("shm_size = 2147483648", "shm_size = 67108864")
    path.write_text(text)
    proc = forked_cli("lint", str(path), *SEED, "--fix")
    assert proc.returncode == 1 and path.read_text() == text
    assert "not written (a Nomad job's HCL is not rewritten" in proc.stderr
    proc = forked_cli("lint", str(path), *SEED, "--format", "json")
    fix = validate(json.loads(proc.stdout))["reports"][0]["findings"][0]["fixes"][0]
    assert fix["form"] == "nomad" and fix["text"].startswith(f"shm_size = {fix['shm_bytes']}  # the task's config")


def test_consul_template_in_a_template_block_is_no_job_template(tmp_path):
    """{{ }} in a template block's data is rendered by Nomad when the task runs (hashicorp/nomad's own demos): the
    job is judged; a {{ }} that leaves no HCL is a job template, said as one."""
    job = 'job "j" {\n group "g" {\n task "t" {\n driver = "docker"\n config {\n image = "redis"\n }\n'
    job += ' template {\n data = <<EOF\nHOST={{ env "NOMAD_IP" }}\nEOF\n destination = "local/env"\n }\n }\n }\n}\n'
    [task], _ = nomad.read(job, "j.nomad")
    assert task.facts.target.name == "j.nomad:j/g/t"
    path = tmp_path / "tpl.nomad"
    path.write_text('job "j" {\n  {{ range .groups }}group "g" {}{{ end }}\n}\n')
    assert_one_line_error(forked_cli("lint", str(path)), 2, "tpl.nomad:2: a Nomad job template ({{ range .groups }}")
