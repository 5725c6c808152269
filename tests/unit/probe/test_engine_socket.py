"""audit's reads on a unix socket without the Docker SDK (probe/engine_socket.py), against a real HTTP server that
answers as dockerd does (chunked JSON, its error bodies) with captured inspects; and the judge shared by containers
alike but for their names."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading

import pytest

from shmdoctor import limits
from shmdoctor.errors import ProbeError, UsageError
from shmdoctor.fleet import audit
from shmdoctor.loader import LoaderSpec
from shmdoctor.probe import engine_socket
from shmdoctor.sizes import MiB
from shmdoctor.workload import Workload
from tests.helpers import DATA, REPO

SEED = Workload(loader=LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB))
CAPTURED = {name: json.loads((DATA / "inspect" / f"{name}.json").read_text()) for name in ("default", "shm2g")}
# Three containers: two replicas of one (same settings, their own names and ids), and another.
CONTAINERS = [
    {**CAPTURED["default"], "Id": "a" * 64, "Name": "/replica-1"},
    {**CAPTURED["default"], "Id": "b" * 64, "Name": "/replica-2"},
    {**CAPTURED["shm2g"], "Id": "c" * 64, "Name": "/big"},
]


class Dockerd(http.server.BaseHTTPRequestHandler):
    """dockerd's answers: JSON in chunks (Go's net/http past its buffer), its {"message": ...} with an error."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def do_GET(self):
        self.seen.append(self.path)
        path, _, query = self.path.partition("?")
        if path == "/version":
            status, body = 200, {"ApiVersion": "1.41", "Components": [{"Name": "Engine"}]}
        elif path == "/containers/json":
            if "bogus" in query:
                status, body = 400, {"message": "invalid filter 'bogus'"}
            else:
                status, body = 200, [{"Id": c["Id"], "Names": [c["Name"]]} for c in CONTAINERS]
        else:
            ref = path.split("/")[2]
            found = [c for c in CONTAINERS if ref in (c["Id"], c["Name"][1:])]
            status, body = (200, found[0]) if found else (404, {"message": f"No such container: {ref}"})
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(0, len(data), 1000):
            piece = data[i : i + 1000]
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass

    def address_string(self):  # a unix socket has no (host, port)
        return "engine"


@pytest.fixture
def dockerd(tmp_path, monkeypatch):
    path = str(tmp_path / "docker.sock")
    server = socketserver.ThreadingUnixStreamServer(path, Dockerd)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # shut down in 0.05 s, not 0.5
    Dockerd.seen = []
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    yield path
    server.shutdown()
    server.server_close()


def _audit(names=(), filters=()):
    return audit(tuple(names), tuple(filters), include_exited=False, exec_df=False, workload=SEED, fail_on="error")


def test_an_audit_reads_the_engine_on_its_socket_and_judges_each_container(dockerd):
    doc = _audit()
    assert [r.facts.target.name for r in doc.reports] == ["replica-1", "replica-2", "big"]
    assert [r.facts.shm.size_bytes for r in doc.reports] == [64 * MiB, 64 * MiB, 2048 * MiB]
    assert [r.verdict for r in doc.reports] == ["fail", "fail", "ok"]
    assert Dockerd.seen[:2] == ["/version", "/containers/json?all=0"]
    assert sorted(Dockerd.seen[2:]) == [f"/containers/{c * 64}/json" for c in "abc"]


def test_the_judge_is_shared_by_containers_alike_but_for_their_names(dockerd):
    replica_1, replica_2, big = _audit().reports
    assert replica_1.findings is replica_2.findings and replica_1.findings != big.findings
    assert (replica_1.facts.target.id, replica_2.facts.target.id) == ("a" * 64, "b" * 64)


def test_a_filter_the_engine_refuses_is_its_own_words_and_a_usage_error(dockerd):
    with pytest.raises(UsageError, match="--filter: invalid filter 'bogus'"):
        _audit(filters=["bogus=1"])
    assert Dockerd.seen[-1] == "/containers/json?all=0&filters=%7B%22bogus%22%3A+%5B%221%22%5D%7D"


def test_a_name_the_engine_does_not_know_is_a_usage_error(dockerd):
    with pytest.raises(UsageError, match="no such container: nope"):
        _audit(names=["replica-1", "nope"])


def test_an_answer_past_the_json_bound_is_refused(dockerd, monkeypatch):
    monkeypatch.setattr(engine_socket, "MAX_JSON_BYTES", 1000)  # the captured inspects are larger
    assert limits.MAX_JSON_BYTES > 1000
    with pytest.raises(ProbeError, match="failed: an answer of more than 1000 bytes"):
        _audit()


def test_audit_on_a_socket_never_imports_the_docker_sdk(dockerd):
    code = (
        "import sys; from shmdoctor.cli import main; main(['audit', '--batch-size', '100', '--num-workers', '4', "
        "'--sample-bytes', '1MiB']); print(sorted(m for m in ('docker', 'requests', 'urllib3') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=os.environ)
    lines = out.stdout.strip().splitlines()
    assert lines[0] == f"3 container(s) on {os.environ['DOCKER_HOST']}" and lines[-1] == "[]"


@pytest.mark.parametrize(
    "answer, says",
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "a negative length in the answer"),
        (b"SSH-2.0-OpenSSH_9.2\r\n", "not an HTTP answer"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", "a line of more than 64 KiB"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[]", "the engine closed the connection"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[]\r\n", "the engine closed the connection"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nnope!", "is not JSON"),
    ],
)
def test_a_broken_answer_is_a_probe_error_naming_what_broke(tmp_path, monkeypatch, answer, says):
    """An engine's answer read as hostile input: each way it can break is exit 3 with what broke, never a hang."""
    path = str(tmp_path / "broken.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(4)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):  # the client may hang up before it has read it all
                conn.recv(65536)
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    try:
        with pytest.raises(ProbeError, match=f"the Docker engine at unix://{path} failed: .*{says}"):
            _audit()
    finally:  # no thread left behind: one blocked in accept() would take signals meant for a later test's waits
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept(), which close() alone does not
        server.close()
        thread.join(10)
        assert not thread.is_alive()
