"""A pod's volume at /dev/shm however its mountPath is written. The API server keeps the string as given (its
validation compares mount paths as strings); containerd's CRI plugin merges the pod's mounts with its own by
filepath.Clean of each container path (mergeMounts: the sandbox's /dev/shm is dropped for a volume there) and runc
mounts at the cleaned path, so /dev/shm/, //dev/shm and /dev/./shm are all the container's /dev/shm: read and fixed
as /dev/shm is. A path that only starts like it is another folder."""

from __future__ import annotations

import json

import pytest

from shmdoctor.cli import main
from shmdoctor.probe.kubernetes import at_shm

SPELLINGS = ["/dev/shm", "/dev/shm/", "//dev/shm", "/dev/./shm", "/dev/shm//", "/dev/../dev/shm", "///dev//shm/."]
OTHERS = ["/dev/shmx", "/dev/shm2", "/dev/shm/cache", "/dev", "/shm", "/dev/sh", "", "dev/shm/..", "/dev/shm/.."]

POD = """apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: pytorch/pytorch
      volumeMounts:
        - name: dshm
          mountPath: {path}
  volumes:
    - name: dshm
      emptyDir:
        medium: Memory
        sizeLimit: {size}
"""
LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # needs 1536Mi


@pytest.mark.parametrize("path", SPELLINGS)
def test_each_spelling_of_dev_shm_is_dev_shm(path):
    assert at_shm(path)


@pytest.mark.parametrize("path", OTHERS)
def test_another_folder_is_not(path):
    assert not at_shm(path)


def lint_json(tmp_path, text: str, *args: str, capsys) -> tuple[int, dict]:
    path = tmp_path / "pod.yaml"
    path.write_text(text)
    code = main(["lint", str(path), "--format", "json", *LOADER, *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("path", SPELLINGS)
def test_an_emptydir_mounted_at_any_spelling_is_the_pods_dev_shm(tmp_path, path, capsys):
    code, doc = lint_json(tmp_path, POD.format(path=f"'{path}'", size="2Gi"), capsys=capsys)
    [report] = doc["reports"]
    assert (report["shm"]["source"], report["shm"]["size_bytes"]) == ("k8s-emptydir", 2 * 2**30)
    assert code == 0 and report["verdict"] == "ok"


@pytest.mark.parametrize("path", ["/dev/shmx", "/dev/shm/cache"])
def test_an_emptydir_elsewhere_leaves_the_runtimes_64_mib(tmp_path, path, capsys):
    code, doc = lint_json(tmp_path, POD.format(path=path, size="2Gi"), capsys=capsys)
    [report] = doc["reports"]
    assert (report["shm"]["source"], report["shm"]["size_bytes"]) == ("runtime-shm", 64 * 2**20)
    assert code == 1


@pytest.mark.parametrize("path", ["/dev/shm/", "//dev/shm", "/dev/./shm"])
def test_fix_grows_the_volume_at_any_spelling_and_adds_none(tmp_path, path):
    file = tmp_path / "pod.yaml"
    file.write_text(POD.format(path=path, size="64Mi"))
    assert main(["lint", str(file), "--fix", *LOADER]) == 1
    assert file.read_text() == POD.format(path=path, size="1536Mi")
