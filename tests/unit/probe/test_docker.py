"""audit's pure half on captured `docker inspect` JSON (Docker 20.10, busybox containers started for the capture,
Env values stripped): where each container's /dev/shm comes from, its size, IPC, limits, and the verdict."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shmdoctor.errors import UsageError
from shmdoctor.fleet import judge_labelled
from shmdoctor.loader import LoaderSpec, loader_config
from shmdoctor.probe import docker as probe
from shmdoctor.render import render
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Workload
from tests.helpers import DATA as TEST_DATA
from tests.helpers import forked_cli, validate

DATA = TEST_DATA / "inspect"
HOST_SHM = 23 * GiB  # what the engine host's /dev/shm would be
SEED = LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB)


def captured(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


# name, docker run options of the capture, (present, size, source), IPC mode
CASES = [
    ("default", "(none)", (True, 64 * MiB, "docker-shm"), "private"),
    ("shm2g", "--shm-size=2g", (True, 2 * GiB, "docker-shm"), "private"),
    ("ipchost", "--ipc=host", (True, HOST_SHM, "host-ipc"), "host"),
    ("ipcnone", "--ipc=none", (False, None, "none"), "none"),
    ("owner", "--ipc=shareable --shm-size=256m", (True, 256 * MiB, "docker-shm"), "shareable"),
    ("tmpfs", "--tmpfs /dev/shm:size=512m", (True, 512 * MiB, "tmpfs"), "private"),
    ("mounttmpfs", "--mount type=tmpfs,destination=/dev/shm,tmpfs-size=1g", (True, GiB, "tmpfs"), "private"),
    ("bind", "-v /dev/shm:/dev/shm", (True, HOST_SHM, "host"), "private"),
    ("memory", "--shm-size=2g --memory=700m --cpus=1.5", (True, 2 * GiB, "docker-shm"), "private"),
    ("tmpfs-ro", "--tmpfs /dev/shm:ro,size=512m", (True, 512 * MiB, "tmpfs"), "private"),
    ("bind-ro", "-v /dev/shm:/dev/shm:ro", (True, HOST_SHM, "host"), "private"),
]


@pytest.mark.parametrize("name, options, shm, ipc", CASES, ids=[c[0] for c in CASES])
def test_shm_and_ipc_from_inspect(name, options, shm, ipc):
    facts = probe.facts_from_inspect(captured(name), host_shm=HOST_SHM).facts
    assert (facts.shm.present, facts.shm.size_bytes, facts.shm.source) == shm, options
    assert facts.ipc.mode == ipc
    assert facts.shm.used_bytes is None  # inspect does not tell; only --exec reads it
    assert facts.shm.free_bytes is None  # nor, then, what is free: the rules judge against the size
    assert (facts.target.kind, facts.target.name, facts.runtime) == ("container", f"sdt-audit-cap-{name}", "docker")
    assert facts.shm.read_only == name.endswith("-ro")  # `touch /dev/shm/x` in each: 'Read-only file system'


@pytest.mark.parametrize("name", ["tmpfs-ro", "bind-ro"])
def test_a_read_only_shm_fails_whatever_its_size(name):
    probed = probe.facts_from_inspect(captured(name), host_shm=HOST_SHM)
    for loader in (LoaderSpec(), SEED):
        report = _judge(probed, loader, "error")
        assert report.verdict == "fail" and report.findings[0].id == "shm-read-only", report.findings


def test_host_shm_is_unknown_when_the_engine_is_remote():
    for name in ("ipchost", "bind"):
        probed = probe.facts_from_inspect(captured(name), host_shm=None)
        shm = probed.facts.shm
        assert shm.present and shm.size_bytes is None and "remote engine" in shm.detail
        report = _judge(probed, SEED, "error")
        assert "probe-incomplete" in [f.id for f in report.findings] and report.verdict == "warn"
        completed = probe.with_usage(probed, (GiB, 0, GiB)).facts  # --exec: df inside tells the size
        assert completed.unreadable == () and completed.shm.size_bytes == GiB


def test_joiner_gets_the_owners_shm_and_names_it():
    owner, joiner = captured("owner"), captured("joiner")
    assert joiner["HostConfig"]["IpcMode"] == f"container:{owner['Id']}"
    facts = probe.facts_from_inspect(joiner, owner).facts
    assert (facts.ipc.mode, facts.ipc.owner) == ("container", "sdt-audit-cap-owner")
    assert facts.shm.size_bytes == 256 * MiB and "sdt-audit-cap-owner" in facts.shm.detail
    alone = probe.facts_from_inspect(joiner).facts  # the owner could not be inspected
    assert alone.shm.size_bytes is None and alone.ipc.owner == owner["Id"][:12]
    assert alone.unreadable and "could not be inspected" in alone.unreadable[0]


def test_limits_and_gpus():
    memory = probe.facts_from_inspect(captured("memory")).facts
    assert memory.memory.limit_bytes == 700 * MiB and memory.memory.used_bytes is None
    assert memory.cpus == 1.5
    default = probe.facts_from_inspect(captured("default")).facts
    assert default.memory.limit_bytes is None and default.cpus is None and default.gpus is None
    gpu = probe.facts_from_inspect(captured("gpu"))
    assert gpu.facts.gpus == "2" and any("GPUs requested: 2" in n for n in gpu.notes)


@pytest.mark.parametrize(
    "host, cpus",
    [
        ({"NanoCpus": 2_000_000_000}, 2.0),
        ({"CpuQuota": 50_000}, 0.5),
        ({"CpuQuota": 150_000, "CpuPeriod": 50_000}, 3.0),
        ({"CpuQuota": -1}, None),
    ],
)
def test_cpus(host, cpus):
    assert probe.cpus_of(host) == cpus


@pytest.mark.parametrize(
    "requests, gpus",
    [
        ([{"Count": -1, "Capabilities": [["gpu"]]}], "all"),
        ([{"Count": 0, "DeviceIDs": ["0", "3"], "Capabilities": [["gpu", "utility"]]}], "0,3"),
        ([{"Count": 1, "Capabilities": [["fpga"]]}], None),
        (None, None),
    ],
)
def test_gpus(requests, gpus):
    assert probe.gpus_of({"DeviceRequests": requests}) == gpus


def test_oom_killed_exited_container():
    probed = probe.facts_from_inspect(captured("oom"))
    assert "oom-killed" in probed.facts.flags
    assert any(n.startswith("exited (exit code 137)") for n in probed.notes)
    report = _judge(probed, LoaderSpec(), "error")
    assert report.verdict == "fail" and "oom-killed" in [f.id for f in report.findings]
    running = probe.facts_from_inspect(captured("default")).facts
    assert not running.flags


def test_no_environment_in_facts_or_output():
    from shmdoctor.render import render
    from shmdoctor.reports import Audit

    info = captured("default")
    assert info["Config"]["Env"] == ["SECRET_TOKEN=<stripped>", "PATH=<stripped>"]  # the capture kept no value
    info["Config"]["Env"] = ["SECRET_TOKEN=hunter2-in-env"]
    report = _judge(probe.facts_from_inspect(info), LoaderSpec(), "error")
    audit = Audit((report,), engine="unix:///var/run/docker.sock")
    assert "hunter2" not in render(audit, "json") and "SECRET_TOKEN" not in repr(report)


def test_loader_label_overrides_the_command_line():
    probed = probe.facts_from_inspect(captured("memory"))
    assert probed.loader_label == "batch_size=100,num_workers=4,sample_bytes=1MiB"
    small = replace(SEED, batch_size=1, sample_bytes=1024)
    report = _judge(probed, small, "error")
    assert report.requirement.bytes == 900 * MiB  # the label's loader, not the command line's
    assert [f.id for f in report.findings if f.severity == "error"] == ["memory-limit"]
    without = _judge(probed, LoaderSpec(), "error")  # the label alone is a whole loader
    assert without.requirement.loader == loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB")


def _judge(probed: probe.Probed, loader: LoaderSpec, fail_on: str):
    return judge_labelled(probed.facts, Workload(loader), probed.loader_label, fail_on, probed.notes)


def test_a_bad_label_is_a_finding_not_a_crash():
    probed = replace(probe.facts_from_inspect(captured("shm2g")), loader_label="batch_size=lots")
    report = _judge(probed, SEED, "error")
    bad = [f for f in report.findings if f.id == "bad-label"]
    assert bad and bad[0].severity == "error" and "batch_size must be an integer, got 'lots'" in bad[0].message
    assert report.requirement is None  # its loader is not known: neither the label's nor the command line's
    assert report.verdict == "fail"


def test_verdicts_against_the_seed_loader():
    verdicts = {
        name: _judge(probe.facts_from_inspect(captured(name), host_shm=HOST_SHM), SEED, "error").verdict
        for name, *_ in CASES
    }
    assert verdicts == {
        "default": "fail",
        "shm2g": "ok",
        "ipchost": "ok",
        "ipcnone": "fail",
        "owner": "fail",
        "tmpfs": "fail",
        "mounttmpfs": "warn",
        "bind": "ok",
        "memory": "fail",
        "tmpfs-ro": "fail",
        "bind-ro": "fail",
    }


def test_gone_container_is_said_not_judged():
    report = _judge(probe.gone("trainer-7", "abc"), SEED, "error")
    assert [f.id for f in report.findings] == ["probe-incomplete"]
    assert "removed while the audit ran" in report.findings[0].message and report.exit_code == 0


@pytest.mark.parametrize(
    "output, usage",
    [
        (
            "Filesystem           1024-blocks    Used Available Capacity Mounted on\n"
            "shm                      65536      1024     64512   2% /dev/shm\n",
            (64 * MiB, MiB, 63 * MiB),
        ),
        (
            "Filesystem           1024-blocks    Used Available Capacity Mounted on\n"
            "df: /dev/shm: can't find mount point\n",
            None,
        ),
        ('OCI runtime exec failed: exec: "df": executable file not found in $PATH', None),
    ],
)
def test_parse_df(output, usage):
    assert probe.parse_df(output) == usage


def test_usage_from_exec_completes_the_facts():
    probed = probe.facts_from_inspect(captured("default"))
    shm = probe.with_usage(probed, (64 * MiB, 60 * MiB, 4 * MiB)).facts.shm
    assert (shm.size_bytes, shm.used_bytes, shm.free_bytes) == (64 * MiB, 60 * MiB, 4 * MiB) and "--exec" in shm.detail
    failed = probe.with_usage(probed, "the container is gone").facts
    assert failed.unreadable == ("/dev/shm use (the container is gone)",)


@pytest.mark.parametrize(
    "options, size",
    [("size=512m", 512 * MiB), ("rw,noexec,size=2g,mode=1777", 2 * GiB), ("rw,mode=1777", None), ("size=50%", None)],
)
def test_tmpfs_size(options, size):
    assert probe._tmpfs_size(options) == size


def test_filters():
    assert probe.parse_filters(["label=team=vision", "label=job", "status=running"]) == {
        "label": ["team=vision", "job"],
        "status": ["running"],
    }
    for bad in ("label", "=x", "name="):
        with pytest.raises(UsageError):
            probe.parse_filters([bad])


def test_audits_json_of_every_captured_container_is_valid():
    """Every captured inspect, judged as audit judges it, in one audit document: valid against shmdoctor/audit/1."""
    from shmdoctor.render import render
    from shmdoctor.reports import Audit

    reports = tuple(
        _judge(probe.facts_from_inspect(json.loads(path.read_text()), host_shm=HOST_SHM), SEED, "error")
        for path in sorted(DATA.glob("*.json"))
    )
    doc = validate(json.loads(render(Audit(reports, engine="unix:///var/run/docker.sock"), "json")))
    assert len(doc["reports"]) == len(reports) > 10 and doc["verdict"] == "fail"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
INSPECT_PATHS = [
    ("Name",),
    ("HostConfig",),
    ("HostConfig", "ShmSize"),
    ("HostConfig", "IpcMode"),
    ("HostConfig", "Memory"),
    ("HostConfig", "NanoCpus"),
    ("HostConfig", "CpuQuota"),
    ("HostConfig", "Tmpfs"),
    ("HostConfig", "Mounts"),
    ("HostConfig", "DeviceRequests"),
    ("HostConfig", "Ulimits"),
    ("Mounts",),
    ("State",),
    ("State", "Status"),
    ("State", "ExitCode"),
    ("State", "OOMKilled"),
    ("Config",),
    ("Config", "Labels"),
    ("Config", "Image"),
    ("Config", "Cmd"),
]


@given(st.sampled_from(INSPECT_PATHS), json_values)
def test_an_inspect_with_any_value_anywhere_is_read_never_a_crash(path, value):
    """An engine's JSON is input: a field of the wrong type is read as absent (or as what it says), never a
    traceback, and the Facts it gives are judged and rendered."""
    info = json.loads(json.dumps(captured("memory")))
    node = info
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    probed = probe.facts_from_inspect(info)
    report = _judge(probed, SEED, "error")
    assert report.verdict in ("ok", "warn", "fail")
    assert render(report, "text") and render(report, "json")


@pytest.mark.parametrize(
    "host, masked",
    [
        ("tcp://admin:hunter2@10.0.0.1:2376", "tcp://admin:***@10.0.0.1:2376"),
        ("ssh://deploy:hunter2@gpu-01", "ssh://deploy:***@gpu-01"),
        ("ssh://deploy@gpu-01", "ssh://deploy@gpu-01"),
        ("unix:///var/run/docker.sock", "unix:///var/run/docker.sock"),
        ("tcp://10.0.0.1:2376", "tcp://10.0.0.1:2376"),
    ],
)
def test_an_engine_address_is_printed_without_its_password(host, masked):
    assert probe.printable(host) == masked
    assert probe.printable(f"Invalid bind address format: {host}") == f"Invalid bind address format: {masked}"


def test_a_long_engine_address_is_cut_short():
    assert len(probe.printable("unix://" + "x" * 10_000)) == 200


def test_a_bad_docker_host_is_a_one_line_usage_error_without_its_password():
    proc = forked_cli("audit", env={"DOCKER_HOST": "tcp://admin:hunter2@10.0.0.1:2376"})
    assert proc.returncode == 2 and proc.stdout == "" and "hunter2" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "shmdoctor: error: DOCKER_HOST='tcp://admin:***@10.0.0.1:2376' is not an engine address: "
        "Invalid bind address format: tcp://admin:***@10.0.0.1:2376"
    ]
