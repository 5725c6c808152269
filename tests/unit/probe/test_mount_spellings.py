"""A mount at /dev/shm however its container path is written, in every form that names one. The API server keeps a
pod's string as given (its validation compares mount paths as strings); containerd's CRI plugin merges the pod's
mounts with its own by filepath.Clean of each container path (mergeMounts: the sandbox's /dev/shm is dropped for a
volume there) and runc mounts at the cleaned path. Docker (moby's withMounts, daemon/oci_linux.go) keeps its own
/dev/shm where a user's tmpfs is at /dev/shm/ (the map of user mounts is keyed by the path as written) and appends
the user's after it, mounted over it at the cleaned path; Podman cleans the path (getTmpfsMounts: unixPathClean). ECS
on EC2 gives Docker the container's linuxParameters.tmpfs as HostConfig.Tmpfs (the agent unmarshals the HostConfig
the service sends: amazon-ecs-agent's task.go, dockerHostConfig), keyed by containerPath. So /dev/shm/, //dev/shm
and /dev/./shm are all the container's /dev/shm: read and fixed as /dev/shm is. A path that only starts like it is
another folder, and a relative one every engine refuses."""

from __future__ import annotations

import json

import pytest

from shmdoctor.cli import main
from shmdoctor.probe import docker, files
from shmdoctor.probe.mountpath import at_shm
from tests.helpers import DATA

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


# each form's one container at /dev/shm, written PATH: a tmpfs of 512 MiB (ECS: in MiB), or the host's bound in
FORMS = {
    "compose tmpfs": ("compose.yml", "services:\n  t:\n    image: x\n    tmpfs:\n      - {path}:size=512m\n"),
    "compose tmpfs volume": (
        "compose.yml",
        "services:\n  t:\n    image: x\n    volumes:\n      - type: tmpfs\n        target: {path}\n"
        "        tmpfs:\n          size: 536870912\n",
    ),
    "docker run --tmpfs": ("run.sh", "docker run --tmpfs {path}:size=512m x\n"),
    "docker run --mount": ("run.sh", "docker run --mount type=tmpfs,dst={path},tmpfs-size=536870912 x\n"),
    "podman run --tmpfs": ("run.sh", "podman run --tmpfs {path}:size=512m x\n"),
    "quadlet Tmpfs=": ("t.container", "[Container]\nImage=x\nTmpfs={path}:size=512m\n"),
    "quadlet Mount=": ("t.container", "[Container]\nImage=x\nMount=type=tmpfs,dst={path},tmpfs-size=512m\n"),
    "ecs tmpfs": (
        "task.json",
        '{{"family": "t", "containerDefinitions": [{{"name": "c", "image": "x", "linuxParameters": '
        '{{"tmpfs": [{{"containerPath": "{path}", "size": 512}}]}}}}]}}',
    ),
    "terraform docker mounts": (
        "main.tf",
        'resource "docker_container" "t" {{\n  name = "t"\n  image = "x"\n  mounts {{\n    target = "{path}"\n'
        '    type = "tmpfs"\n    tmpfs_options {{\n      size_bytes = 536870912\n    }}\n  }}\n}}\n',
    ),
}
HOST = {
    "compose bind": ("compose.yml", "services:\n  t:\n    image: x\n    volumes:\n      - {path}:{path}\n"),
    "docker run -v": ("run.sh", "docker run -v {path}:{path} x\n"),
    "quadlet Volume=": ("t.container", "[Container]\nImage=x\nVolume={path}:{path}\n"),
    "kubernetes hostPath": (
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\nspec:\n  containers:\n    - name: t\n      image: x\n"
        "      volumeMounts:\n        - name: h\n          mountPath: {path}\n  volumes:\n    - name: h\n"
        "      hostPath:\n        path: {path}\n",
    ),
}


def read(tmp_path, name: str, text: str):
    (tmp_path / name).write_text(text)
    [found] = files.read([str(tmp_path / name)]).definitions
    return found.facts.shm


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("path", ["/dev/shm/", "//dev/shm", "/dev/./shm"])
def test_a_tmpfs_at_any_spelling_is_the_containers_dev_shm_in_every_form(tmp_path, form, path):
    name, text = FORMS[form]
    shm = read(tmp_path, name, text.format(path=path))
    assert (shm.source, shm.size_bytes) == ("tmpfs", 512 * 2**20)


@pytest.mark.parametrize("form", FORMS)
def test_a_tmpfs_in_a_folder_of_dev_shm_is_not_in_any_form(tmp_path, form):
    name, text = FORMS[form]
    assert read(tmp_path, name, text.format(path="/dev/shm/cache")).source != "tmpfs"


@pytest.mark.parametrize("form", HOST)
@pytest.mark.parametrize("path", ["/dev/shm/", "//dev/shm"])
def test_the_hosts_dev_shm_at_any_spelling_is_the_hosts_in_every_form(tmp_path, form, path):
    name, text = HOST[form]
    assert read(tmp_path, name, text.format(path=path)).source == "host"


@pytest.mark.parametrize("path", ["/dev/shm/", "//dev/shm"])
def test_inspect_of_a_tmpfs_written_at_any_spelling_is_the_containers_dev_shm(path):
    # tmpfs.json (`docker run --tmpfs /dev/shm:size=512m`) with the key as the engine keeps it: as written
    info = json.loads((DATA / "inspect" / "tmpfs.json").read_text())
    info["HostConfig"]["Tmpfs"] = {path: "size=512m"}
    shm = docker.shm_of(info)
    assert (shm.source, shm.size_bytes) == ("tmpfs", 512 * 2**20)
