"""`DOCKER_HOST=ssh://...`: audit reaches an engine through the ssh client, as the docker CLI does.

A real sshd on loopback, with its own host key and an authorized key made here; nothing of the machine's ssh
configuration is changed: a wrapper named `ssh`, first on PATH, gives the client the key and accepts the host key.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import BUSYBOX, REPO, missing, unique_name, validate

pytestmark = pytest.mark.usefixtures("images")
NAME = unique_name("ssh-")


@pytest.fixture(scope="module")
def ssh_host(tmp_path_factory):
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    if not os.path.exists(sshd) or not shutil.which("ssh-keygen"):
        missing("no sshd (Debian's openssh-server; scripts/test.sh installs it)")
    d = tmp_path_factory.mktemp("ssh")
    for key in ("client", "host"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    log = open(d / "sshd.log", "w")  # noqa: SIM115 (sshd writes to it for the fixture's life)
    server = subprocess.Popen(
        [
            sshd,
            "-D",
            "-e",
            "-f",
            "/dev/null",
            "-p",
            str(port),
            "-h",
            str(d / "host"),
            "-o",
            "ListenAddress=127.0.0.1",
            "-o",
            f"AuthorizedKeysFile={d / 'authorized_keys'}",
            "-o",
            "StrictModes=no",
            "-o",
            "PidFile=none",
        ],
        stderr=log,
    )
    try:
        yield _client(d, port), d / "sshd.log"
    finally:
        server.terminate()
        server.wait(timeout=10)


def _client(d: Path, port: int) -> dict:
    """The environment of a docker client that reaches the engine through this sshd, once it listens."""
    (d / "bin").mkdir()
    wrapper = d / "bin" / "ssh"
    wrapper.write_text(
        f"#!/bin/sh\nexec {shutil.which('ssh')} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
        f' -o LogLevel=ERROR -o BatchMode=yes -i {d / "client"} "$@"\n'
    )
    wrapper.chmod(0o755)
    for _ in range(50):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    return {**os.environ, "PATH": f"{d / 'bin'}:{os.environ['PATH']}", "DOCKER_HOST": f"ssh://root@127.0.0.1:{port}"}


@pytest.fixture
def containers():
    names = [f"{NAME}{i}" for i in range(12)]
    try:
        for name in names:
            subprocess.run(
                ["docker", "run", "-d", "--name", name, "--network", "none", BUSYBOX, "sleep", "600"],
                check=True,
                capture_output=True,
            )
        yield names
    finally:
        subprocess.run(["docker", "rm", "-f", *names], capture_output=True)


def test_audit_over_ssh_judges_every_container(ssh_host, containers):
    env, sshd_log = ssh_host
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shmdoctor",
            "audit",
            "--filter",
            f"name={NAME}",
            "--batch-size",
            "100",
            "--num-workers",
            "4",
            "--sample-bytes",
            "1MiB",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    doc = validate(json.loads(proc.stdout))
    assert proc.returncode == 1 and doc["engine"].startswith("ssh://"), proc.stderr
    assert sorted(r["target"]["name"] for r in doc["reports"]) == sorted(containers)
    assert all(r["findings"][0]["id"] == "shm-too-small" for r in doc["reports"])
    assert "Accepted publickey for root" in sshd_log.read_text()  # it went through sshd, not the local socket


def test_an_ssh_host_that_does_not_answer_is_one_line_and_exit_3(ssh_host):
    env, _ = ssh_host
    proc = subprocess.run(
        [sys.executable, "-m", "shmdoctor", "audit"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "DOCKER_HOST": "ssh://root@127.0.0.1:1"},
        cwd=REPO,
    )
    ours = [line for line in proc.stderr.splitlines() if line.startswith("shmdoctor:")]
    assert proc.returncode == 3 and len(ours) == 1 and "cannot reach the Docker engine at ssh://" in ours[0]
    assert "Traceback" not in proc.stderr
