"""Azure ML job YAML -> Facts: resources.shm_size, a pipeline's steps, a real example job."""

from __future__ import annotations

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.loader import loader_config, requirement
from shmdoctor.probe import azureml, documents, files
from shmdoctor.render import forms
from shmdoctor.rules import judge
from shmdoctor.sizes import GiB
from tests.helpers import DATA

SCHEMA = "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"


def jobs(text: str) -> dict:
    [doc] = documents.parse(text, "job.yml")
    assert azureml.is_job(doc.body)
    return {d.facts.target.name.split(":", 1)[1]: d.facts for d in azureml.probe(doc)}


def test_shm_size_and_its_fix_in_the_jobs_language():
    facts = jobs(SCHEMA + "name: t\ncommand: python train.py\nenvironment: e\nresources: {shm_size: 2g}\n")["t"]
    assert (facts.shm.size_bytes, facts.runtime, facts.ml_signs) == (2 * GiB, "azureml", ("command train.py",))
    need = requirement(
        loader_config(batch_size=100, num_workers=4, sample_bytes="4MiB")
    )  # (2·4 + 1) × 400 MiB: 3.5 GiB
    grow = judge(facts, need).findings[0].fixes[0]
    assert forms.block(grow, facts) == "resources: {shm_size: 6g}"  # 3.5 GiB + 25%, rounded up
    host = judge(facts, need).findings[0].fixes[1]
    assert host.ipc == "host" and not forms.applies(host, facts)  # an Azure ML job has no host IPC


def test_a_pipelines_steps_are_each_judged():
    found = jobs(
        "$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json\ntype: pipeline\n"
        "display_name: p\njobs:\n  prep: {type: command, command: python prep.py, environment: e}\n"
        "  train: {type: command, command: python train.py, environment: e, resources: {shm_size: 8g}}\n"
    )
    assert {name: f.shm.size_bytes for name, f in found.items()} == {"p/prep": None, "p/train": 8 * GiB}


def test_a_pipelines_control_flow_nodes_run_no_container_and_are_not_judged():
    """Azure ML's if_else (condition, true_block, false_block) and do_while only route to other steps."""
    found = jobs(
        "$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json\ntype: pipeline\n"
        "display_name: p\njobs:\n  check: {type: command, command: python check.py, environment: e}\n"
        "  train: {type: command, command: python train.py, environment: e, resources: {shm_size: 8g}}\n"
        "  branch: {type: if_else, condition: '${{parent.jobs.check.outputs.ok}}', "
        "true_block: '${{parent.jobs.train}}'}\n"
        "  loop: {type: do_while, body: '${{parent.jobs.train}}', condition: done, limits: {max_iteration_count: 3}}\n"
    )
    assert sorted(found) == ["p/check", "p/train"]


def test_the_real_example_job_has_no_shm_size_and_says_so():
    [found] = files.read([str(DATA / "real" / "azureml-cifar-distributed-job.yml")]).definitions
    assert found.facts.shm.size_bytes is None and "set it for your loader" in found.facts.unreadable[0]
    assert [f.id for f in judge(found.facts, None).findings] == ["probe-incomplete"]


def test_a_bad_shm_size_is_file_and_line():
    with pytest.raises(UsageError, match=r"^job.yml:6: t: resources.shm_size: cannot read 'plenty'"):
        jobs(SCHEMA + "name: t\ncommand: python train.py\nenvironment: e\nresources:\n  shm_size: plenty\n")


def test_a_job_with_services_is_a_job_not_a_compose_file(tmp_path):
    (tmp_path / "job.yml").write_text(
        SCHEMA + "name: t\ncommand: python train.py\nenvironment: azureml:pytorch:1\nresources: {shm_size: 3100m}\n"
        "services:\n  my_jupyter: {type: jupyter_lab}\n  my_tensorboard: {type: tensor_board, log_dir: outputs}\n"
    )
    [found] = files.read([str(tmp_path / "job.yml")]).definitions
    assert (found.facts.target.name, found.facts.runtime, found.facts.shm.size_bytes) == (
        f"{tmp_path}/job.yml:t",
        "azureml",
        3100 * 2**20,
    )
