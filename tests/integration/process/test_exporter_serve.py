"""The exporter's HTTP side against hostile clients, for real: a process on a loopback port, a slowloris of 200
connections under a descriptor limit that cannot hold them, resets; scrapes still answered within generous bounds."""

from __future__ import annotations

import contextlib
import ctypes
import gzip
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

import psutil
import pytest

from shmdoctor.errors import UsageError
from shmdoctor.exporter import serve
from tests.helpers import REPO, WAIT

NOFILE = 128  # the exporter's descriptor limit here: 64 connections at once, far fewer than the slowloris opens


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def exporter():
    port = _port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "exporter", "--source", "proc", "--listen", f"127.0.0.1:{port}"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    for _ in range(300):
        with contextlib.suppress(OSError):
            if _scrape(url, 2):
                break
        time.sleep(0.1)
    yield proc, url, port
    proc.terminate()
    proc.wait(30)


def _scrape(url: str, timeout: float) -> bool:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status == 200 and b"shmdoctor_" in r.read()


def _scrape_within(url: str, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            if _scrape(url, 5):
                return True
        time.sleep(0.2)
    return False


HEAD = b"GET /metrics HTTP/1.1\r\nX-a: "


def _connect(port: int) -> socket.socket:
    """A request's first bytes, as soon as the connection is up (at once, or on the next round)."""
    s = socket.socket()
    s.setblocking(False)  # 200 at once: a full accept queue makes a blocking connect wait
    s.connect_ex(("127.0.0.1", port))
    return s


def test_scrapes_are_answered_under_a_slowloris_of_200_connections(exporter):
    """Requests that never end, a header byte every 0.25 s on each, a new one for each the exporter drops: scraped
    once four rounds of it went by."""
    proc, url, port = exporter
    stop = threading.Event()
    held = [_connect(port) for _ in range(200)]
    begun: set[socket.socket] = set()
    rounds = threading.Semaphore(0)

    def slowloris() -> None:
        while not stop.wait(0.25):
            rounds.release()
            for i, s in enumerate(held):
                try:
                    s.send(b"a" if s in begun else HEAD)
                    begun.add(s)
                except (BlockingIOError, InterruptedError):
                    pass  # still connecting: the accept queue is full
                except OSError:
                    s.close()
                    held[i] = _connect(port)

    attacker = threading.Thread(target=slowloris, daemon=True)
    attacker.start()
    try:
        for _ in range(4):
            assert rounds.acquire(timeout=WAIT)
        cpu_before, start = psutil.Process(proc.pid).cpu_times(), time.monotonic()
        answered = [_scrape_within(url, 30) for _ in range(5)]
        cpu_after, wall = psutil.Process(proc.pid).cpu_times(), time.monotonic() - start
    finally:
        stop.set()
        attacker.join(30)
        for s in held:
            s.close()
    assert answered == [True] * 5
    busy = (cpu_after.user + cpu_after.system) - (cpu_before.user + cpu_before.system)
    assert busy < 0.8 * wall + 1, f"{busy:.1f} s of CPU in {wall:.1f} s: spinning"  # out of descriptors: 100%
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err


def test_a_request_that_never_ends_is_dropped(monkeypatch):
    """A byte every 0.2 s, never the end of the headers: dropped once REQUEST_S passed (0.5 s here, the server in
    this process; the exporter's own is 10 s), not kept while it trickles, and a scrape still answered."""
    monkeypatch.setattr(serve, "REQUEST_S", 0.5)
    latest = serve.Latest()
    latest.set(b"shmdoctor_up 1\n")
    server = serve.serve("127.0.0.1", 0, latest, wait=5)
    port = server.server_address[1]
    try:
        start, closed = time.monotonic(), False  # before the connection: its deadline is later
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(HEAD)
        while not closed and time.monotonic() - start < 60:
            try:
                s.sendall(b"a")
                s.settimeout(0.2)
                closed = s.recv(1024) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        s.close()
        assert closed and serve.REQUEST_S <= time.monotonic() - start < serve.REQUEST_S + 20
        assert _scrape(f"http://127.0.0.1:{port}/metrics", 5)
    finally:
        server.shutdown()
        server.server_close()


def test_a_client_that_resets_is_no_news_in_the_log(exporter):
    proc, url, port = exporter
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a reset
        s.close()
    assert _scrape_within(url, 30)
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "error" not in err, err


@pytest.mark.parametrize("text", ["127.0.0.1:²", ":９７８７", "127.0.0.1:" + "9" * 5000, "[::1]:"])
def test_a_bad_listen_address_is_a_usage_error(text):
    with pytest.raises(UsageError, match="expected ADDR:PORT"):
        serve.parse(text)


def test_a_sigterm_any_of_its_threads_takes_stops_it(exporter):
    """The kernel hands a process's signal to any thread that does not block it: SIGTERM to one of the exporter's
    threads (tgkill) stops it as docker stop's does (it slept on in an hour's sleep: the handler waited for it)."""
    proc, _, _ = exporter
    threads = [int(task) for task in os.listdir(f"/proc/{proc.pid}/task") if int(task) != proc.pid]
    assert threads, "the exporter serves from threads of its own"
    assert ctypes.CDLL(None, use_errno=True).tgkill(proc.pid, threads[0], signal.SIGTERM) == 0
    assert proc.wait(WAIT) == 143
    assert proc.stderr.read().strip().splitlines()[-1] == "shmdoctor: terminated"


@pytest.mark.parametrize(("accept", "gzipped"), [("gzip", True), ("gzip;q=0", False), ("gzip;q=0, identity", False)])
def test_gzip_only_where_the_scrape_accepts_it(exporter, accept, gzipped):
    _, url, _ = exporter
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept})
    with urllib.request.urlopen(request, timeout=WAIT) as r:
        body = r.read()
        assert (r.headers.get("Content-Encoding") == "gzip") is gzipped
    assert body.startswith(b"\x1f\x8b") is gzipped  # gzip's magic, or the text itself
    assert (gzip.decompress(body) if gzipped else body).startswith(b"# HELP shmdoctor_")
