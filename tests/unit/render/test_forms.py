"""A fix said in each target's own form: the map is total, each form says a size, a limit, the IPC namespace and a
variable as that platform writes them, and what a platform has no setting for is left out, not said in docker's."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import get_args

import pytest

from shmdoctor import render
from shmdoctor.model import Facts, Fix, Form, Ipc, Memory, Shm, Swarm, Target
from shmdoctor.render import forms
from shmdoctor.sizes import GiB, MiB

GROW = Fix("give /dev/shm 1.5 GiB", shm_bytes=1536 * MiB, memory_bytes=3 * GiB)
HOST = Fix("use the host's /dev/shm", ipc="host")
ENV = Fix("turn NCCL's SHM transport off", env=(("NCCL_SHM_DISABLE", "1"),))
NOFILE = Fix("raise the descriptor limit", nofile=4096)
DOCKER = Facts(
    Target("container", "c"), Shm.unmeasured(64 * MiB, "docker-shm", ""), Ipc("private"), Memory(None, None), "docker"
)


def facts(kind: str, runtime: str, **kw) -> Facts:
    return replace(DOCKER, target=Target(kind, "t"), runtime=runtime, **kw)  # type: ignore[arg-type]


def test_every_form_has_a_renderer_and_the_schema_names_them_all():
    assert set(forms.FORMS) == set(get_args(Form))
    schema = json.loads(render.schema_file(render.schema_id("check")).read_text())
    assert schema["$defs"]["fix"]["properties"]["form"]["enum"] == list(get_args(Form))


@pytest.mark.parametrize(
    "target, form",
    [
        (facts("local", "none"), "shell"),
        (DOCKER, "docker"),
        (facts("container", "podman"), "podman"),
        (facts("local", "docker"), "docker"),  # check inside a container
        (facts("service", "compose"), "compose"),
        (facts("service", "compose", swarm=Swarm()), "swarm"),
        (facts("service", "podman"), "quadlet"),
        (facts("workload", "kubernetes"), "kubernetes"),
        (facts("workload", "ecs"), "ecs"),
        (facts("workload", "batch"), "batch"),
        (facts("workload", "azureml"), "azureml"),
    ],
)
def test_the_form_is_where_the_target_is_defined(target, form):
    assert forms.form_of(target) == form


@pytest.mark.parametrize(
    "form, grow, host, env",
    [
        ("docker", ("docker run --shm-size=1536m --memory=3g ...",), ("docker run --ipc=host ...",), None),
        ("podman", ("podman run --shm-size=1536m --memory=3g ...",), ("podman run --ipc=host ...",), None),
        (
            "compose",
            ('shm_size: "1536m"', 'mem_limit: "3g"'),
            ("ipc: host",),
            ('environment: {NCCL_SHM_DISABLE: "1"}',),
        ),
        (
            "swarm",
            (
                "volumes: [{type: tmpfs, target: /dev/shm, tmpfs: {size: 1610612736}}]",
                'deploy: {resources: {limits: {memory: "3g"}}}',
            ),
            ("volumes: [{type: bind, source: /dev/shm, target: /dev/shm}]",),
            None,
        ),
        (
            "kubernetes",
            (
                "volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 1536Mi}}]  # pod spec",
                "volumeMounts: [{name: dshm, mountPath: /dev/shm}]  # the container that runs the loader",
                "resources: {limits: {memory: 3Gi}}  # the same container",
            ),
            ("hostIPC: true  # pod spec",),
            ('env: [{name: NCCL_SHM_DISABLE, value: "1"}]',),
        ),
        (
            "quadlet",
            ("ShmSize=1536m", "PodmanArgs=--memory=3g"),
            ("PodmanArgs=--ipc=host",),
            ("Environment=NCCL_SHM_DISABLE=1",),
        ),
        (
            "ecs",
            ('"linuxParameters": {"sharedMemorySize": 1536}', '"memory": 3072'),
            ('"ipcMode": "host"  # the task definition; EC2 only',),
            ('"environment": [{"name": "NCCL_SHM_DISABLE", "value": "1"}]',),
        ),
        (
            "batch",
            (
                '"linuxParameters": {"sharedMemorySize": 1536}',
                '"resourceRequirements": [{"type": "MEMORY", "value": "3072"}]',
            ),
            (),  # a Batch job definition has no ipcMode
            None,
        ),
        (
            "azureml",
            ("resources: {shm_size: 1536m}", "# compute: an instance type with more than 3g of memory"),
            (),  # nor has an Azure ML job a host IPC
            ("environment_variables: {NCCL_SHM_DISABLE: " + '"1"}',),
        ),
    ],
)
def test_each_form_says_it_as_that_platform_writes_it(form, grow, host, env):
    assert forms.statements(GROW, DOCKER, form) == grow
    assert forms.statements(HOST, DOCKER, form) == host
    assert forms.applies(HOST, DOCKER, form) == bool(host)
    if env is not None:
        assert forms.statements(ENV, DOCKER, form) == env


def test_a_tmpfs_at_dev_shm_is_grown_itself_where_the_platform_mounts_one():
    tmpfs = replace(DOCKER, shm=Shm.unmeasured(512 * MiB, "tmpfs", ""))
    assert forms.run_args(GROW, tmpfs) == ("--tmpfs", "/dev/shm:size=1536m", "--memory=3g")
    assert forms.statements(GROW, tmpfs, "compose")[0] == 'tmpfs: ["/dev/shm:size=1536m"]'
    assert forms.statements(GROW, tmpfs, "quadlet")[0] == "Tmpfs=/dev/shm:size=1536m"
    assert forms.statements(GROW, tmpfs, "ecs")[0] == (
        '"linuxParameters": {"tmpfs": [{"containerPath": "/dev/shm", "size": 1536}]}'
    )


def test_the_table_says_it_on_one_line_and_a_fix_that_sets_nothing_by_its_summary():
    assert forms.line(GROW, DOCKER, "ecs") == '"linuxParameters": {"sharedMemorySize": 1536}; "memory": 3072'
    assert forms.line(GROW, DOCKER, "azureml") == "resources: {shm_size: 1536m}"  # the comment is left out
    assert forms.line(NOFILE, DOCKER, "shell") == "ulimit -n 4096"
    assert forms.line(NOFILE, DOCKER, "kubernetes") == "raise the descriptor limit"  # a pod spec has no ulimit
    loader = Fix("fits today", loader={"num_workers": 1})
    assert forms.line(loader, DOCKER) == "DataLoader(num_workers=1, ...)"
    assert forms.statements(Fix("see `shmdoctor clean`"), DOCKER) == ()


def test_a_compose_fix_for_a_service_in_anothers_ipc_namespace_goes_to_the_owner():
    reader = facts("service", "compose", ipc=Ipc("container", "feature-store"))
    assert forms.statements(GROW, reader)[0] == "# on service feature-store, the IPC owner"


@pytest.mark.parametrize(
    "target, runner",
    [
        (DOCKER, "docker"),
        (facts("local", "docker"), "docker"),  # check inside a Docker container
        (facts("container", "podman"), "podman"),  # audit through Podman's socket
        (facts("local", "podman"), "podman"),  # check inside a Podman container
        (facts("service", "podman"), "podman"),  # a Quadlet unit: Podman runs it
        (facts("service", "compose"), None),  # compose runs on either engine: its own form says it
        (facts("workload", "kubernetes"), None),
        (facts("workload", "ecs"), None),
        (facts("local", "none"), None),  # the machine itself
        (facts("local", "container"), None),  # a container whose engine could not be told
    ],
)
def test_the_command_is_the_run_line_of_the_engine_that_runs_the_target(target, runner):
    expected = f"{runner} run --shm-size=1536m --memory=3g ..." if runner else None
    assert forms.command(GROW, target) == expected
    assert forms.command(HOST, target) == (f"{runner} run --ipc=host ..." if runner else None)
    assert forms.command(Fix("fits today", loader={"num_workers": 1}), target) is None  # sets nothing a run takes
