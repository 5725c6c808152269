"""examples/'s deployments of the exporter: the compose services run for real, the project's image (hostPID, every
capability but SYS_PTRACE and DAC_READ_SEARCH dropped) behind the read-only socket proxy built from Debian's haproxy,
and the DaemonSet's promises."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request

import pytest
import yaml

from tests.helpers import REPO, missing, run_cli
from tests.integration.prometheus.exporting import RUN, Containers, by_container, df_used, docker, free_port

MiB = 2**20
COMPOSE = REPO / "examples" / "exporter-compose.yml"
DAEMONSET = REPO / "examples" / "k8s-exporter-daemonset.yaml"


# What the exporter's container sends through the proxy's socket, as an attacker in it would: a POST that would create
# a container, and the GET of a container's log (not the exporter's to read). Each answer's status line.
ATTEMPTS = """
import socket, sys
create = b"POST /containers/create HTTP/1.1\\r\\nHost: d\\r\\nContent-Length: 2\\r\\n\\r\\n{}"
logs = b"GET /containers/%s/logs?stdout=1 HTTP/1.1\\r\\nHost: d\\r\\n\\r\\n" % sys.argv[1].encode()
listing = b"GET /v1.41/containers/json HTTP/1.1\\r\\nHost: d\\r\\n\\r\\n"
for request in (create, logs, listing):
    s = socket.socket(socket.AF_UNIX)
    s.connect("/run/docker-read-only/docker.sock")
    s.sendall(request)
    print(s.recv(4096).split(b"\\r\\n")[0].decode())
"""


@pytest.fixture
def proxy_image(images):
    """examples/exporter-socket-proxy.Dockerfile built on the Debian test image (no registry here for
    debian:bookworm-slim; its haproxy from Debian's mirror), for this run alone."""
    tag = f"shmdoctor-test/socket-proxy:{RUN}"
    dockerfile = REPO / "examples" / "exporter-socket-proxy.Dockerfile"
    build = ["docker", "build", "-q", "--network", "host", "--build-arg", "BASE_IMAGE=shmdoctor-test/debian:bookworm"]
    proc = subprocess.run([*build, "-t", tag, "-f", str(dockerfile), str(REPO / "examples")], capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    try:
        assert proc.returncode == 0, proc.stderr
        yield tag
    finally:
        subprocess.run(["docker", "rmi", tag], capture_output=True, timeout=120)


@pytest.mark.docker
def test_the_compose_service_reads_the_containers_through_the_read_only_proxy(image, proxy_image):
    """The exporter holds no engine socket: the proxy's alone, which passes its GETs (the containers are read, each
    figure as df inside says) and refuses the rest (403) before the engine sees it: no container is created."""
    if not shutil.which("docker-compose"):
        missing("docker-compose is not installed (scripts/test.sh installs it)")
    port = free_port()
    socket = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    env = {
        **os.environ,
        "SHMDOCTOR_IMAGE": image,
        "SHMDOCTOR_PROXY_IMAGE": proxy_image,
        "SHMDOCTOR_LISTEN": f"127.0.0.1:{port}",
        "SHMDOCTOR_DOCKER_SOCKET": socket,
    }
    compose = ["docker-compose", "-f", str(COMPOSE), "-p", RUN.replace("-", "")]
    with Containers() as c:
        name, cid = c.start(
            "compose", "--shm-size=88m", cmd=("sh", "-c", "dd if=/dev/zero of=/dev/shm/f bs=1M count=9; sleep 600")
        )
        up = subprocess.run([*compose, "up", "-d", "--no-build"], env=env, capture_output=True, text=True, timeout=300)
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
            exporter = subprocess.run([*compose, "ps", "-q", "shmdoctor-exporter"], env=env, capture_output=True,
                                      text=True, timeout=60).stdout.strip()  # fmt: skip
            mounts = json.loads(docker("inspect", "-f", "{{json .Mounts}}", exporter))
            assert all(not m["Source"].endswith("docker.sock") for m in mounts), mounts  # no engine socket of its own
            before = docker("ps", "-aq")
            answers = docker("exec", exporter, "python3", "-c", ATTEMPTS, cid).splitlines()
            assert answers == ["HTTP/1.1 403 Forbidden", "HTTP/1.1 403 Forbidden", "HTTP/1.1 200 OK"], answers
            assert docker("ps", "-aq") == before
        finally:
            subprocess.run([*compose, "down", "--volumes", "--timeout", "5"], env=env, capture_output=True, timeout=120)


def test_the_daemonset_reads_proc_with_no_socket_and_admits_prometheus_alone():
    daemonset, policy = [d for d in yaml.safe_load_all(DAEMONSET.read_text()) if d]
    assert daemonset["kind"] == "DaemonSet" and policy["kind"] == "NetworkPolicy"
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["hostPID"] is True and "volumes" not in pod  # no engine socket: root on the node, read-only or not
    [container] = pod["containers"]
    assert "volumeMounts" not in container
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_PTRACE", "DAC_READ_SEARCH"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    args = container["args"]
    assert args[:3] == ["exporter", "--source", "proc"] and run_cli(*args, "--help").returncode == 0
    address, _, port = args[args.index("--listen") + 1].rpartition(":")
    [pod_ip] = [e for e in container["env"] if f"$({e['name']})" == address]  # the pod's own IP, not every address
    assert pod_ip["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert container["ports"][0]["containerPort"] == int(port)
    assert daemonset["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == port
    labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"] == labels and policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": int(port), "protocol": "TCP"}]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]
