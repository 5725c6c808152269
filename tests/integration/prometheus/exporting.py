"""The exporter as a user runs it (a process on a loopback port), real containers, an engine socket that can be
slowed or taken away, and Debian's prometheus and promtool."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import BUSYBOX, REPO, missing, unique_name

RUN = unique_name("exp")  # container names unique per run
DOCKER_SOCKET = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary(name: str) -> str:
    """prometheus or promtool: a failure under CI when missing, a skip elsewhere."""
    path = shutil.which(name)
    if not path:
        missing(f"{name} is not installed (Debian's prometheus package; scripts/test.sh installs it)")
    return path


def samples(text: str) -> dict[str, list[tuple[dict, float]]]:
    found: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found.setdefault(s.name, []).append((s.labels, s.value))
    return found


def by_container(text: str, metric: str) -> dict[str, float]:
    return {labels["container"]: value for labels, value in samples(text).get(metric, [])}


class Exporter:
    def __init__(self, proc: subprocess.Popen, url: str):
        self.proc, self.url = proc, url

    def scrape(self, timeout: float = 30) -> str:
        with urllib.request.urlopen(self.url, timeout=timeout) as r:
            return r.read().decode()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def exporter(*args: str, env: dict | None = None, prefix: list[str] | None = None) -> Iterator[Exporter]:
    """`shmdoctor exporter --listen 127.0.0.1:PORT ARGS`, up once /metrics answers, terminated after."""
    port = free_port()
    argv = [*(prefix or []), sys.executable, "-m", "shmdoctor", "exporter", "--listen", f"127.0.0.1:{port}"]
    argv += ["--interval", "1", *args]  # a reading a second: the tests see changes soon
    proc = subprocess.Popen(
        argv, cwd=REPO, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    running = Exporter(proc, f"http://127.0.0.1:{port}/metrics")
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                running.scrape(timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "the exporter did not answer within 30 s"
                time.sleep(0.2)
        yield running
    finally:
        running.stop()


def docker(*args: str, timeout: int = 60) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


class Containers:
    """with Containers() as c: c.start(suffix, *docker_run_args, cmd=...) -> (name, id); all removed at the end."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, suffix: str, *args: str, cmd: tuple[str, ...] = ("sleep", "600"), image: str = BUSYBOX) -> tuple:
        name = f"{RUN}-{suffix}"
        self.started.append(name)
        return name, docker("run", "-d", "--name", name, "--network", "none", *args, image, *cmd)

    def __enter__(self) -> Containers:
        return self

    def __exit__(self, *exc) -> None:
        if self.started:
            subprocess.run(["docker", "rm", "-f", *self.started], capture_output=True, timeout=60)


def df_used(name: str) -> int:
    """Bytes in use in the container's /dev/shm, as `df` inside it says (the oracle the exporter is checked on)."""
    lines = docker("exec", name, "df", "-Pk", "/dev/shm").splitlines()
    return int(lines[-1].split()[2]) * 1024


class SocketProxy:
    """A unix socket in front of the real engine's: it forwards (an engine that answers), holds every request
    unanswered (a slow engine), or closes (the engine went away)."""

    def __init__(self, path: Path, *, hold: bool = False):
        self.path, self.hold = str(path), hold
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(64)
        self._conns: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def docker_host(self) -> str:
        return f"unix://{self.path}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self._conns.append(client)
            if self.hold:
                continue  # read nothing, answer nothing
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(DOCKER_SOCKET)
            self._conns.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
