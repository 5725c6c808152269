"""Workflow engines' steps are pods: each Argo template (container, script, containerSet, a resource template's
manifest) and each Tekton task, named by its template or task, with the spec's volumes."""

from __future__ import annotations

import pytest

from shmdoctor.probe import workflows
from shmdoctor.sizes import GiB, MiB
from tests.unit.probe.test_kubernetes import workloads

ARGO = """apiVersion: argoproj.io/v1alpha1
kind: {kind}
metadata: {{name: train}}
spec:
{spec}"""
WORKFLOW = """  volumes:
    - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 4Gi}}
  templates:
    - name: main
      steps: [[{name: prep, template: prep}, {name: fit, template: fit}]]
    - name: prep
      script:
        image: python:3.11
        command: [python]
        source: import torch; print(torch.__version__)
    - name: fit
      container:
        image: pytorch/pytorch:2.3.0
        command: [torchrun, train.py]
        volumeMounts: [{name: dshm, mountPath: /dev/shm}]
        resources: {limits: {memory: "{{inputs.parameters.memory}}", nvidia.com/gpu: 1}}
    - name: pair
      containerSet:
        volumeMounts: [{name: dshm, mountPath: /dev/shm}]
        containers:
          - {name: a, image: busybox}
          - {name: b, image: busybox}
"""


@pytest.mark.parametrize("kind", ["Workflow", "WorkflowTemplate", "ClusterWorkflowTemplate"])
def test_each_argo_template_is_a_workload_named_by_it(kind):
    found, passed_over = workloads(ARGO.format(kind=kind, spec=WORKFLOW))
    sizes = {name: d.facts.shm.size_bytes for name, d in found.items()}
    assert sizes == {
        f"{kind}/train/prep": 64 * MiB,  # a script: its container, without the spec's volume mounted
        f"{kind}/train/fit": 4 * GiB,  # the spec's volume, mounted; a memory limit that is a parameter is unknown
        f"{kind}/train/pair/a": 4 * GiB,  # a containerSet's shared mounts on each of its containers
        f"{kind}/train/pair/b": 4 * GiB,
    }
    assert passed_over == []
    assert found[f"{kind}/train/prep"].facts.ml_signs == ()  # python:3.11 running a script that imports torch
    assert found[f"{kind}/train/fit"].facts.memory.limit_bytes is None and found[f"{kind}/train/fit"].facts.gpus == "1"


def test_a_cron_workflows_spec_and_a_resource_templates_manifest():
    spec = """  schedule: "0 * * * *"
  workflowSpec:
    templates:
      - name: launch
        resource:
          action: create
          manifest: |
            apiVersion: batch/v1
            kind: Job
            metadata: {name: trainer}
            spec:
              template:
                spec:
                  containers: [{name: t, image: pytorch/pytorch, resources: {limits: {memory: 8Gi}}}]
"""
    found, passed_over = workloads(ARGO.format(kind="CronWorkflow", spec=spec))
    [(name, job)] = found.items()
    assert name == "Job/trainer" and job.facts.memory.limit_bytes == 8 * GiB and passed_over == []
    assert job.facts.target.line == 8  # the template's line: the manifest's own lines count from the string


TEKTON = """apiVersion: tekton.dev/v1
kind: Task
metadata: {name: train}
spec:
  volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}]
  stepTemplate:
    volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  steps:
    - {name: fetch, image: alpine/git, script: git clone x}
    - name: fit
      image: pytorch/pytorch
      script: python train.py
      resources: {limits: {memory: "$(params.memory)"}}
"""


def test_a_tekton_tasks_steps_share_its_pod_and_step_template():
    found, _ = workloads(TEKTON)
    assert {n: d.facts.shm.size_bytes for n, d in found.items()} == {
        "Task/train/fetch": 2 * GiB,
        "Task/train/fit": 2 * GiB,
    }
    assert found["Task/train/fit"].facts.ml_signs == ("image pytorch/pytorch", "command train.py")


def test_a_pipelines_embedded_task_specs_are_named_by_their_task():
    pipeline = """apiVersion: tekton.dev/v1
kind: PipelineRun
metadata: {name: run}
spec:
  pipelineSpec:
    tasks:
      - name: fit
        taskSpec:
          steps: [{name: train, image: pytorch/pytorch, script: torchrun train.py}]
    finally:
      - name: report
        taskRef: {name: notify}
"""
    found, passed_over = workloads(pipeline)
    assert list(found) == ["PipelineRun/run/fit"] and passed_over == []


@pytest.mark.parametrize(
    "value, parameter", [("{{inputs.parameters.memory}}", True), ("$(params.memory)", True), ("8Gi", False), (8, False)]
)
def test_workflow_parameters_are_unknown_values(value, parameter):
    assert workflows.is_parameter(value) is parameter
