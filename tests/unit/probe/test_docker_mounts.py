"""What is at a container's /dev/shm, decided from its inspect JSON alone (no engine): the captured containers of
tests/data/inspect (bind.json: `-v /dev/shm:/dev/shm`, mounttmpfs.json: `--mount type=tmpfs,...`), each changed in
one field as the engine writes it for the neighbouring command line. Only the host's own /dev/shm bound there is the
host's: another folder or a named volume at /dev/shm has a size inspect does not tell. The engine-facing side
(audit on real containers) is tests/integration/docker's."""

from __future__ import annotations

import copy
import json

import pytest

from shmdoctor.probe import docker
from tests.helpers import DATA

HOST_SHM = 8 * 2**30


def captured(name: str) -> dict:
    return json.loads((DATA / "inspect" / f"{name}.json").read_text())


def with_mount(**fields) -> dict:
    """bind.json with its one mount changed: `-v SOURCE:/dev/shm` or `-v NAME:/dev/shm` as inspect shows them."""
    info = copy.deepcopy(captured("bind"))
    info["Mounts"][0].update(fields)
    return info


def test_the_hosts_dev_shm_bound_there_is_the_hosts():
    shm = docker.shm_of(captured("bind"), host_shm=HOST_SHM)
    assert (shm.source, shm.size_bytes, shm.read_only) == ("host", HOST_SHM, False)


@pytest.mark.parametrize(
    "fields,said",
    [
        ({"Source": "/data/shm"}, "a bind mount of /data/shm"),  # -v /data/shm:/dev/shm
        ({"Source": "/dev/shm/job"}, "a bind mount of /dev/shm/job"),  # a folder inside the host's
        ({"Source": "/dev"}, "a bind mount of /dev"),
        (  # -v dshm:/dev/shm, a named volume
            {"Type": "volume", "Name": "dshm", "Source": "/var/lib/docker/volumes/dshm/_data", "Driver": "local"},
            "a volume mount of /var/lib/docker/volumes/dshm/_data",
        ),
    ],
    ids=["other-folder", "inside-the-hosts", "dev", "named-volume"],
)
def test_anything_else_at_dev_shm_is_of_a_size_inspect_does_not_tell(fields, said):
    shm = docker.shm_of(with_mount(**fields), host_shm=HOST_SHM)
    assert (shm.source, shm.size_bytes) == ("unknown", None)
    assert said in shm.detail


def test_a_read_only_bind_is_read_only_whatever_its_source():
    for source in ("/dev/shm", "/data/shm"):
        assert docker.shm_of(with_mount(Source=source, RW=False, Mode="ro"), host_shm=HOST_SHM).read_only


def test_a_mount_elsewhere_leaves_the_engines_dev_shm():
    info = with_mount(Destination="/dev/shm/cache")
    shm = docker.shm_of(info, host_shm=HOST_SHM)
    assert (shm.source, shm.size_bytes) == ("docker-shm", 64 * 2**20)  # HostConfig.ShmSize of the capture


def test_a_tmpfs_mount_says_its_size_and_read_only():
    info = captured("mounttmpfs")
    assert docker.shm_of(info).size_bytes == 2**30 and not docker.shm_of(info).read_only
    info["HostConfig"]["Mounts"][0]["ReadOnly"] = True  # --mount type=tmpfs,destination=/dev/shm,readonly
    assert docker.shm_of(info).read_only
    del info["HostConfig"]["Mounts"][0]["TmpfsOptions"]  # no tmpfs-size: the kernel's default, not known here
    assert (docker.shm_of(info).source, docker.shm_of(info).size_bytes) == ("tmpfs", None)
