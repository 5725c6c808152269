"""Which runtime `check` is in, from the marks each leaves in the root filesystem and the environment."""

from __future__ import annotations

import pytest

from shmdoctor.probe import local


@pytest.mark.parametrize(
    "files, container_env, expected",
    [
        (["run/.containerenv"], None, "podman"),  # Podman writes it (empty when not --privileged)
        ([], "podman", "podman"),  # and sets container=podman
        ([".dockerenv"], None, "docker"),
        ([], "systemd-nspawn", "container"),
        ([], None, "none"),
    ],
)
def test_runtime_marks(tmp_path, monkeypatch, files, container_env, expected):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    if container_env is None:
        monkeypatch.delenv("container", raising=False)
    else:
        monkeypatch.setenv("container", container_env)
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    (tmp_path / "proc" / "1").mkdir(parents=True)
    (tmp_path / "proc" / "1" / "cgroup").write_text("0::/\n")
    assert local.runtime(str(tmp_path)) == expected


@pytest.mark.parametrize("name", ["SM_TRAINING_ENV", "SM_CURRENT_HOST", "SAGEMAKER_PROGRAM"])
def test_sagemaker_is_told_by_the_names_it_sets(tmp_path, monkeypatch, name):
    for mark in local.SAGEMAKER_MARKS:
        monkeypatch.delenv(mark, raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    (tmp_path / ".dockerenv").touch()  # its containers run under Docker: SageMaker is said first
    assert local.runtime(str(tmp_path)) == "docker"
    monkeypatch.setenv(name, "x")
    assert local.runtime(str(tmp_path)) == "sagemaker"
