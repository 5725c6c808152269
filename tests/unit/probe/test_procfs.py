"""Whose a process is, from its cgroup path: the captured Docker container and host of this machine, and each
driver's and runtime's naming (tests/data/cgroup/kubernetes.txt)."""

from __future__ import annotations

import pytest

from shmdoctor.probe.procfs import Origin, origin_of
from tests.helpers import DATA

CGROUP = DATA / "cgroup"


def _cases():
    for line in (CGROUP / "kubernetes.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            expected, _, text = line.partition(" | ")
            yield pytest.param(expected.split(), text, id=text.split("/")[-1][:40])


@pytest.mark.parametrize(("expected", "text"), list(_cases()))
def test_each_runtime_naming(expected, text):
    pod, container, runtime = expected
    got = origin_of(text)
    if container == "-":
        assert got is None
    else:
        assert got == Origin(container, None if pod == "-" else pod, runtime)
        assert got.name == (f"pod_{pod}" if pod != "-" else container[:12])


def test_a_real_docker_container_of_this_machine():
    text = (CGROUP / "docker-cgroupfs-v1.txt").read_text()
    got = origin_of(text)
    assert got is not None and got.runtime == "docker" and got.pod_uid is None
    assert f"/docker/{got.container_id}" in text and len(got.container_id) == 64


def test_a_host_process_of_this_machine_is_no_container():
    assert origin_of((CGROUP / "host-v1.txt").read_text()) is None
