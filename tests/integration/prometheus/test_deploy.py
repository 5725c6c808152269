"""examples/'s deployments of the exporter: the compose service run for real from the project's image (hostPID, the
socket read-only, every capability but SYS_PTRACE and DAC_READ_SEARCH dropped), and the DaemonSet's promises."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import urllib.request

import pytest
import yaml

from tests.helpers import REPO, missing, run_cli
from tests.integration.prometheus.exporting import RUN, Containers, by_container, df_used, free_port

MiB = 2**20
COMPOSE = REPO / "examples" / "exporter-compose.yml"
DAEMONSET = REPO / "examples" / "k8s-exporter-daemonset.yaml"


@pytest.mark.docker
def test_the_compose_service_reads_the_containers_from_its_own_container(image):
    if not shutil.which("docker-compose"):
        missing("docker-compose is not installed (scripts/test.sh installs it)")
    port = free_port()
    socket = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    env = {
        **os.environ,
        "SHMDOCTOR_IMAGE": image,
        "SHMDOCTOR_LISTEN": f"127.0.0.1:{port}",
        "SHMDOCTOR_DOCKER_SOCKET": socket,
    }
    compose = ["docker-compose", "-f", str(COMPOSE), "-p", RUN.replace("-", "")]
    with Containers() as c:
        name, _ = c.start(
            "compose", "--shm-size=88m", cmd=("sh", "-c", "dd if=/dev/zero of=/dev/shm/f bs=1M count=9; sleep 600")
        )
        up = subprocess.run([*compose, "up", "-d"], env=env, capture_output=True, text=True, timeout=300)
        try:
            assert up.returncode == 0, up.stderr
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                        text = r.read().decode()
                    if by_container(text, "shmdoctor_shm_used_bytes").get(name, 0) >= 9 * MiB:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, subprocess.run(
                    [*compose, "logs"], env=env, capture_output=True, text=True
                ).stdout
                time.sleep(0.5)
            assert by_container(text, "shmdoctor_shm_size_bytes")[name] == 88 * MiB
            assert by_container(text, "shmdoctor_shm_used_bytes")[name] == df_used(name)
        finally:
            subprocess.run([*compose, "down", "--timeout", "5"], env=env, capture_output=True, timeout=120)


def test_the_daemonset_runs_the_exporter_with_host_pid_and_the_socket_read_only():
    [daemonset] = [d for d in yaml.safe_load_all(DAEMONSET.read_text()) if d]
    assert daemonset["kind"] == "DaemonSet"
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    [container] = pod["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/var/run/docker.sock"]["readOnly"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_PTRACE", "DAC_READ_SEARCH"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    args = container["args"]
    assert args[0] == "exporter" and run_cli(*args, "--help").returncode == 0  # options the command takes
    port = int(args[args.index("--listen") + 1].rpartition(":")[2])
    assert container["ports"][0]["containerPort"] == port
    assert daemonset["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == str(port)
