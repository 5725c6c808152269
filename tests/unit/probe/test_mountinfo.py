"""The /dev/shm probe on mountinfo captured inside real containers (tests/data/mountinfo: `docker run <flags>`)."""

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.probe import mountinfo
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA as TEST_DATA

DATA = TEST_DATA / "mountinfo"
HOST_SHM = 24684096 * 1024  # the capturing machine's /dev/shm


def captured(name: str) -> list[mountinfo.Mount]:
    text = (DATA / f"{name}.txt").read_text().split("---")[0]
    return mountinfo.parse(text)


@pytest.mark.parametrize(
    "capture, ipc_host, source, size",
    [
        ("default", False, "docker-shm", 64 * MiB),
        ("shm-size-2g", False, "docker-shm", 2 * GiB),
        ("shm-size-768m", False, "docker-shm", 768 * MiB),
        ("memory-700m", False, "docker-shm", 2 * GiB),
        ("ipc-shareable", False, "docker-shm", 256 * MiB),
        ("ipc-container", False, "docker-shm", 256 * MiB),
        ("ipc-host", True, "host-ipc", HOST_SHM),
        ("tmpfs-512m", False, "tmpfs", 512 * MiB),
        ("bind-host-shm", False, "host", HOST_SHM),
        ("ipc-none", False, "none", None),
    ],
)
def test_shm_source_of_captured_docker_mounts(capture, ipc_host, source, size):
    mount = mountinfo.find(captured(capture))
    got, detail = mountinfo.shm_source(mount, in_container=True, ipc_host=ipc_host, runtime="docker")
    assert got == source and detail
    assert (mount.size_bytes if mount else None) == size


def test_kubernetes_sources():
    runtime_default = mountinfo.parse_line(
        "1271 1263 0:270 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k"
    )
    emptydir = mountinfo.parse_line("1290 1263 0:262 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=2097152k,inode64")
    assert (
        mountinfo.shm_source(runtime_default, in_container=True, ipc_host=False, runtime="kubernetes")[0]
        == "runtime-shm"
    )
    assert mountinfo.shm_source(emptydir, in_container=True, ipc_host=False, runtime="kubernetes")[0] == "k8s-emptydir"
    assert emptydir.size_bytes == 2 * GiB


def test_on_a_host_it_is_the_system_shm():
    host = mountinfo.parse_line("25 24 0:23 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,size=24684096k")
    assert mountinfo.shm_source(host, in_container=False, ipc_host=True, runtime="none")[0] == "system"


def test_stacked_mounts_the_last_wins():
    mounts = mountinfo.parse(
        "25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684096k\n"
        "30 25 0:27 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=1024k\n"
    )
    assert mountinfo.find(mounts).size_bytes == 1024 * 1024


def test_escaped_mount_points_and_optional_fields():
    m = mountinfo.parse_line(
        r"36 35 98:0 /mnt1 /mnt/with\040space rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue"
    )
    assert m.mount_point == "/mnt/with space" and m.fstype == "ext3" and m.size_bytes is None


@pytest.mark.parametrize("line", ["", "garbage", "1 2 3 4 5 6", "a b 0:1 / /x rw - tmpfs shm"])
def test_bad_lines_are_usage_errors(line):
    with pytest.raises(UsageError):
        mountinfo.parse_line(line)


def test_podmans_own_shm_mount_is_said_as_podmans():
    mount = mountinfo.find(captured("podman-default"))  # podman run, Debian's podman 4.3: size=64000k
    source, detail = mountinfo.shm_source(mount, in_container=True, ipc_host=False, runtime="podman")
    assert (source, mount.size_bytes) == ("podman-shm", 64000 * 1024) and detail.startswith("Podman's shm mount")
