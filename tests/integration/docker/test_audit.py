"""shmdoctor audit end to end: the real Docker engine, real busybox containers with real --shm-size, --ipc, --tmpfs,
-v /dev/shm, --memory and labels; the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from shmdoctor.sizes import GiB, MiB
from tests.helpers import BUSYBOX, missing, run_cli, unique_name, valid_sarif, validate

PREFIX = unique_name("audit-")
SECRET = "s3cr3t-value-for-audit-tests"
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # needs 900 MiB
LABEL = "shmdoctor.loader=batch_size=10,num_workers=2,sample_bytes=1MiB"  # needs (2·2+1) × 10 MiB = 50 MiB

# name -> docker run options (all: --network none, busybox, sleep 600)
FLEET = {
    "default": ["-e", f"SECRET_TOKEN={SECRET}"],
    "shm2g": ["--shm-size=2g", "--label", "team=vision"],
    "shm768m": ["--shm-size=768m"],
    "ipchost": ["--ipc=host"],
    "ipcnone": ["--ipc=none"],
    "owner": ["--ipc=shareable", "--shm-size=256m"],
    "joiner": [f"--ipc=container:{PREFIX}owner"],
    "tmpfs": ["--tmpfs", "/dev/shm:size=512m", "--label", "team=vision"],
    "bind": ["-v", "/dev/shm:/dev/shm"],
    "memory": ["--shm-size=2g", "--memory=700m"],
    "labelled": ["--shm-size=256m", "--label", LABEL],
}


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=120)


def start(name: str, *options: str, cmd: tuple[str, ...] = ("sleep", "600")) -> str:
    docker("run", "-d", "--network", "none", "--name", PREFIX + name, *options, BUSYBOX, *cmd)
    return PREFIX + name


def remove(*names: str) -> None:
    docker("rm", "-f", *names, check=False)


@pytest.fixture(scope="module")
def fleet(images):
    started = []
    try:
        for name, options in FLEET.items():  # in order: the owner before its joiner
            started.append(start(name, *options))
        yield started
    finally:
        remove(*started)


def audit(*args: str, env: dict | None = None) -> tuple[int, dict, str]:
    proc = run_cli("audit", *args, "--format", "json", env=env)
    assert proc.stdout.strip(), f"no output; stderr: {proc.stderr}"
    return proc.returncode, validate(json.loads(proc.stdout)), proc.stdout + proc.stderr


def by_name(doc: dict) -> dict[str, dict]:
    return {r["target"]["name"][len(PREFIX) :]: r for r in doc["reports"]}


def errors(report: dict) -> list[str]:
    return [f["id"] for f in report["findings"] if f["severity"] == "error"]


def first_fix(report: dict) -> list[str]:
    return next(fix["docker_args"] for f in report["findings"] if f["severity"] == "error" for fix in f["fixes"])


def test_every_kind_of_container_against_the_seed_loader(fleet):
    code, doc, _ = audit("--filter", f"name={PREFIX}", *SEED)
    reports = by_name(doc)
    assert set(reports) == set(FLEET)
    assert doc["schema"] == "shmdoctor/audit/1" and doc["verdict"] == "fail" and code == 1 and doc["exec"] is False

    def shm(name):
        s = reports[name]["shm"]
        return s["present"], s["size_bytes"], s["source"]

    assert shm("default") == (True, 64 * MiB, "docker-shm")
    assert errors(reports["default"]) == ["shm-too-small"] and first_fix(reports["default"]) == ["--shm-size=1536m"]
    assert shm("shm2g") == (True, 2 * GiB, "docker-shm") and reports["shm2g"]["verdict"] == "ok"
    assert errors(reports["shm768m"]) == ["shm-too-small"]  # the folklore formula's 800 MiB: one batch short

    host = os.statvfs("/dev/shm")  # the engine runs on this machine: its /dev/shm is the host's
    assert shm("ipchost") == (True, host.f_blocks * host.f_frsize, "host-ipc")
    assert reports["ipchost"]["ipc"]["mode"] == "host"
    assert "ipc-host" in [f["id"] for f in reports["ipchost"]["findings"]]
    assert shm("bind") == (True, host.f_blocks * host.f_frsize, "host")
    assert reports["bind"]["ipc"]["mode"] == "private" and reports["bind"]["verdict"] == "ok"

    assert shm("ipcnone")[::2] == (False, "none") and errors(reports["ipcnone"]) == ["no-shm"]
    assert first_fix(reports["ipcnone"]) == ["--ipc=private", "--shm-size=1536m"]

    assert shm("owner") == (True, 256 * MiB, "docker-shm") and reports["owner"]["ipc"]["mode"] == "shareable"
    joiner = reports["joiner"]
    assert joiner["ipc"] == {"mode": "container", "owner": PREFIX + "owner"}
    assert joiner["shm"]["size_bytes"] == 256 * MiB and PREFIX + "owner" in joiner["shm"]["detail"]
    grow = next(fix for f in joiner["findings"] if f["severity"] == "error" for fix in f["fixes"])
    assert grow["summary"].startswith(f"on {PREFIX}owner, the IPC owner: give /dev/shm")

    assert shm("tmpfs") == (True, 512 * MiB, "tmpfs")
    assert errors(reports["tmpfs"]) == ["shm-too-small"]
    assert first_fix(reports["tmpfs"]) == ["--tmpfs", "/dev/shm:size=1536m"]  # --shm-size would change nothing

    memory = reports["memory"]
    assert memory["memory"]["limit_bytes"] == 700 * MiB and errors(memory) == ["memory-limit"]

    labelled = reports["labelled"]  # its label overrides the command line's loader
    assert labelled["requirement"]["bytes"] == 50 * MiB and labelled["verdict"] == "ok"
    assert reports["default"]["requirement"]["bytes"] == 900 * MiB

    assert all(r["shm"]["used_bytes"] is None for r in doc["reports"])  # read-only: use unknown


def test_without_a_loader_the_defaults_are_flagged_where_it_looks_like_ml(fleet):
    trainer = start("torchrun", cmd=("sh", "-c", "exec sleep 600", "torchrun"))  # a command that trains
    try:
        code, doc, _ = audit("--filter", f"name={PREFIX}")
    finally:
        remove(trainer)
    reports = by_name(doc)
    [finding] = reports["torchrun"]["findings"]
    assert (
        finding["id"] == "default-shm"
        and "looks like a training or inference job (command torchrun)" in (finding["message"])
    )
    assert reports["default"]["findings"] == []  # busybox sleeping: nothing says it trains, 64 MiB is fine
    assert reports["shm2g"]["requirement"] is None and reports["shm2g"]["verdict"] == "ok"
    assert reports["labelled"]["requirement"]["bytes"] == 50 * MiB  # the label alone is a loader
    assert code == 1  # --ipc=none: no /dev/shm at all


def test_a_bad_label_is_its_containers_finding_and_the_fleet_is_still_judged(fleet):
    bad = start("badlabel", "--label", "shmdoctor.loader=batch_size=100,num_workers=1000000000,sample_bytes=1MiB")
    try:
        code, doc, _ = audit(bad, PREFIX + "labelled", PREFIX + "shm2g", *SEED)  # a billion workers once hung it
    finally:
        remove(bad)
    reports = by_name(doc)
    [finding] = [f for f in reports["badlabel"]["findings"] if f["id"] == "bad-label"]
    assert "num_workers must be at most 4096" in finding["message"] and reports["badlabel"]["requirement"] is None
    assert reports["labelled"]["requirement"]["bytes"] == 50 * MiB and reports["shm2g"]["verdict"] == "ok"
    assert code == 1


def test_an_ignore_label_silences_its_container_and_one_naming_no_rule_is_its_finding(images):
    """Two stand-ins for a training job (their command names torchrun) on the engine's default 64 MiB: default-shm,
    a warning, for each. One's shmdoctor.ignore label silences it (listed, marked); another's names no rule: its
    bad-label finding (an error), nothing ignored, and the audit of the others goes on (it was exit 2 for all)."""
    job = ("sh", "-c", "sleep 600", "torchrun")
    quiet = start("ignored", "--label", "shmdoctor.ignore=default-shm", cmd=job)
    typo = start("typo", "--label", "shmdoctor.ignore=default-shmm", cmd=job)
    plain = start("plain", cmd=job)
    try:
        code, doc, _ = audit(quiet, typo, plain)
    finally:
        remove(quiet, typo, plain)
    reports = by_name(doc)
    ((default,),) = [[f for f in reports["ignored"]["findings"] if f["id"] == "default-shm"]]
    assert default["suppressed"] == {"by": "its shmdoctor.ignore label", "kind": "inSource"}
    assert reports["ignored"]["verdict"] == "ok" and reports["plain"]["verdict"] == "warn"
    ids = {f["id"]: f for f in reports["typo"]["findings"]}
    assert "no rule 'default-shmm'" in ids["bad-label"]["message"] and ids["default-shm"]["suppressed"] is None
    assert code == 1  # bad-label is an error


def test_text_table_one_row_per_container(fleet):
    proc = run_cli("audit", "--filter", f"name={PREFIX}", *SEED, env={"NO_COLOR": "1"})
    rows = [line for line in proc.stdout.splitlines() if line.split()[1:2] and line.split()[1].startswith(PREFIX)]
    assert len(rows) == len(FLEET) and proc.returncode == 1
    row = next(r for r in rows if f"{PREFIX}default " in r)
    assert row.split()[0] == "FAIL" and "64 MiB" in row and "900 MiB" in row and "--shm-size=1536m" in row
    assert any(f"container:{PREFIX}owner" in r for r in rows)
    assert "read-only" in proc.stderr and "--exec" in proc.stderr


def test_environment_values_are_never_printed(fleet):
    assert SECRET in docker("inspect", PREFIX + "default").stdout  # the engine does hold it
    runs = [["--filter", f"name={PREFIX}"], ["--exec", "--filter", f"name={PREFIX}"], [PREFIX + "default"]]
    for fmt in ("json", "text"):
        for args in runs:
            proc = run_cli("audit", *args, "--format", fmt, *SEED)
            assert proc.returncode == 1, proc.stderr
            assert SECRET not in proc.stdout and SECRET not in proc.stderr
            assert "SECRET_TOKEN" not in proc.stdout + proc.stderr


def test_names_as_arguments_in_their_order(fleet):
    code, doc, _ = audit(PREFIX + "shm2g", PREFIX + "default", *SEED)
    assert [r["target"]["name"] for r in doc["reports"]] == [PREFIX + "shm2g", PREFIX + "default"]
    assert code == 1
    short_id = docker("inspect", "-f", "{{.Id}}", PREFIX + "shm2g").stdout.strip()[:12]
    code, doc, _ = audit(short_id, *SEED)
    assert code == 0 and doc["reports"][0]["target"]["name"] == PREFIX + "shm2g"


def test_unknown_name_is_bad_input(fleet):
    proc = run_cli("audit", PREFIX + "shm2g", PREFIX + "no-such-container", "--format", "json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"shmdoctor: error: no such container: {PREFIX}no-such-container"]


def test_docker_filters(fleet):
    code, doc, _ = audit("--filter", "label=team=vision", "--filter", f"name={PREFIX}", *SEED)
    assert sorted(by_name(doc)) == ["shm2g", "tmpfs"] and code == 1
    code, doc, _ = audit("--filter", "label=team=nobody", *SEED)
    assert doc["reports"] == [] and doc["verdict"] == "ok" and code == 0
    proc = run_cli("audit", "--filter", "colour=blue")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "colour" in proc.stderr
    proc = run_cli("audit", PREFIX + "shm2g", "--filter", "label=team=vision")
    assert proc.returncode == 2


def since(t0: float, name: str) -> list[str]:
    """The engine's own record of what was done to a container since t0."""
    out = docker(
        "events",
        "--since",
        str(int(t0)),
        "--until",
        str(int(time.time()) + 1),
        "--filter",
        f"container={name}",
        "--format",
        "{{.Action}}",
    ).stdout
    return [line.split(":")[0] for line in out.splitlines()]


def test_read_only_unless_exec(fleet):
    target = PREFIX + "shm2g"
    docker("exec", target, "dd", "if=/dev/zero", "of=/dev/shm/held", "bs=1M", "count=100")
    time.sleep(1.1)  # events have one-second resolution
    t0 = time.time()
    code, doc, _ = audit(target, PREFIX + "ipcnone")
    assert doc["reports"][0]["shm"]["used_bytes"] is None
    time.sleep(1.1)
    assert since(t0, target) == []  # inspect only: the engine saw no exec, no change
    t1 = time.time()
    proc = run_cli("audit", target, PREFIX + "ipcnone", "--exec", "--format", "json")
    doc = validate(json.loads(proc.stdout))
    shm = doc["reports"][0]["shm"]
    assert doc["exec"] is True and shm["used_bytes"] == 100 * MiB and shm["free_bytes"] == 2 * GiB - 100 * MiB
    assert "--exec" in shm["detail"] and "--exec" in proc.stderr
    time.sleep(1.1)
    assert "exec_create" in since(t1, target)
    assert since(t1, PREFIX + "ipcnone") == []  # no /dev/shm: nothing to read, nothing run


@pytest.mark.parametrize(
    "host, says", [("tcp://127.0.0.1:1", "connection refused"), ("unix:///nonexistent/docker.sock", "no socket there")]
)
def test_unreachable_engine_is_one_line_exit_3(engine, host, says):
    proc = run_cli("audit", *SEED, env={"DOCKER_HOST": host})
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"shmdoctor: error: cannot reach the Docker engine at {host}: {says}; check DOCKER_HOST and that dockerd runs"
    ]


def test_permission_denied_on_the_socket_is_exit_3(engine):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        missing("needs root and setpriv to run the CLI as a user outside the docker group")
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "shmdoctor", "audit"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert proc.returncode == 3 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "permission denied" in lines[0], proc.stderr


def test_container_removed_mid_audit_is_said_and_the_audit_goes_on(fleet, monkeypatch, capsys):
    from shmdoctor.cli import main
    from shmdoctor.probe import docker as probe

    label = f"sdt-audit-gone={PREFIX}"
    doomed, kept = PREFIX + "doomed", PREFIX + "kept"
    listed = probe.Engine.list

    def list_then_remove(self, filters, include_exited):  # the engine lists it, then it is gone before its inspect
        found = listed(self, filters, include_exited)
        assert doomed in [name for _, name in found]
        remove(doomed)
        return found

    monkeypatch.setattr(probe.Engine, "list", list_then_remove)
    try:
        start("doomed", "--label", label, "--shm-size=2g")
        start("kept", "--label", label, "--shm-size=2g")
        code = main(["audit", "--filter", f"label={label}", "--format", "json", *SEED])
    finally:
        remove(doomed, kept)
    doc = validate(json.loads(capsys.readouterr().out))
    reports = by_name(doc)
    assert reports["kept"]["verdict"] == "ok"
    gone = reports["doomed"]
    assert [f["id"] for f in gone["findings"]] == ["probe-incomplete"]
    assert "removed while the audit ran" in gone["findings"][0]["message"] and gone["target"]["id"]
    assert code == 0 and doc["verdict"] == "warn"


def test_oom_killed_container_with_all(images):
    # 100 MiB into a 256 MiB /dev/shm under a 32 MiB memory limit: tmpfs pages are charged to the cgroup.
    fill = ("dd", "if=/dev/zero", "of=/dev/shm/x", "bs=1M", "count=100")
    name = PREFIX + "oom"
    try:
        start("oom", "--memory=32m", "--shm-size=256m", cmd=fill)
        assert docker("wait", name).stdout.strip() == "137"
        assert docker("inspect", "-f", "{{.State.OOMKilled}}", name).stdout.strip() == "true"
        code, doc, _ = audit("--filter", f"name={name}")
        assert doc["reports"] == [] and code == 0  # running containers only, by default
        code, doc, _ = audit("--all", "--filter", f"name={name}", *SEED)
        report = doc["reports"][0]
        assert "oom-killed" in errors(report) and code == 1
        assert any(n.startswith("exited (exit code 137)") for n in report["notes"])
        proc = run_cli("audit", "--all", "--filter", f"name={name}", env={"NO_COLOR": "1"})
        assert f"{name}: error oom-killed" in proc.stdout and f"{name}: note: exited (exit code 137)" in proc.stdout
    finally:
        remove(name)


def test_sarif_names_each_container_on_a_placeholder_artifact(fleet):
    """The same audit as SARIF: one result per finding of the JSON, each at the placeholder artifact that says there
    is no file, with its container as the logical location; the same exit code."""
    code, doc, _ = audit(*fleet, *SEED)
    proc = run_cli("audit", *fleet, *SEED, "--format", "sarif")
    assert proc.returncode == code == 1, proc.stderr
    results = valid_sarif(proc.stdout)["runs"][0]["results"]
    findings = [(r["target"]["name"], f["id"]) for r in doc["reports"] for f in r["findings"]]
    located = [(r["locations"][0]["logicalLocations"][0]["name"], r["ruleId"]) for r in results]
    assert located == findings and (f"{PREFIX}default", "shm-too-small") in located
    artifacts = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert artifacts == {"shmdoctor-container-engine"}


def test_a_vllm_command_is_judged_as_its_tensor_parallel_need(images):
    # busybox runs `sh -c 'exec sleep 600' vllm serve m --tensor-parallel-size 2` (the words after the script are its
    # $0 and arguments): inspect's Entrypoint and Cmd say vLLM at T=2 in the default 64 MiB. FACTS.md, vLLM 0.33:
    # (16 MiB + 1 + 2) × 10 + 2 × (24 MiB + 2) × 10 + (4 MiB + 2) × 6 = 696,254,540 B, and vLLM refuses its first ring
    # (16 MiB + 3) × 10 = 167,772,190 B = 160.00 MiB; × 1.25 = 830 MiB: Docker's 1g, the next size of the series.
    rings = (16 * MiB + 3) * 10 + 2 * (24 * MiB + 2) * 10 + (4 * MiB + 2) * 6
    name = PREFIX + "vllm"
    try:
        start(
            "vllm",
            "--entrypoint",
            "sh",
            cmd=("-c", "exec sleep 600", "vllm", "serve", "m", "--tensor-parallel-size", "2"),
        )
        code, doc, _ = audit("--filter", f"name={name}")
        (report,) = doc["reports"]
        assert code == 1 and errors(report) == ["shm-too-small"] and report["requirement"]["bytes"] == rings
        (finding,) = [f for f in report["findings"] if f["id"] == "shm-too-small"]
        assert "160.00 MiB required, 64.00 MiB free" in finding["message"]
        assert "--shm-size=1g" in first_fix(report)
        assert (
            "workload inferred from its command: vllm, tensor parallel 2 (--tensor-parallel-size 2)" in report["notes"]
        )
    finally:
        remove(name)
