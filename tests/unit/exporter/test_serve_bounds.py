"""The exporter's HTTP side, each bound in this process on loopback, in milliseconds: the connections it keeps
(docs/commands/exporter.md: at most 256, half the descriptor limit where that is lower, the oldest one still
sending its request dropped for a new one), a request's deadline, the reading thread that outlives a failed
reading, the answers before and after the first reading, and what is said of a client's fault (nothing) and of
its own (one bounded line). The real exporter under a slowloris of 200: tests/integration/process/
test_exporter_serve.py."""

from __future__ import annotations

import errno
import gzip
import re
import resource
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.exporter import serve
from tests.helpers import REPO

DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy of the environment


@pytest.mark.parametrize(
    "soft, slots",
    [
        (resource.RLIM_INFINITY, 256),
        (1_048_576, 256),
        (513, 256),
        (512, 256),  # half of it: 256
        (511, 255),
        (128, 64),  # the integration test's limit
        (9, 4),
        (8, 4),
        (7, 4),  # never fewer than 4
        (0, 4),
    ],
)
def test_connections_at_once_are_256_or_half_the_descriptor_limit(soft, slots):
    assert serve.slots(soft) == slots


def test_the_request_deadline_is_the_one_the_manual_states():
    manual = (REPO / "docs" / "commands" / "exporter.md").read_text()
    stated = re.search(r"must arrive within (\d+) s in all", manual)
    assert stated and float(stated.group(1)) == serve.REQUEST_S


def until(deadline_in: float, data: bytes = b"") -> tuple[object, float]:
    """What _Until reads from a connection (data sent before, or nothing) with its deadline that far from now, and
    in how many seconds; a read that hangs is ended after 3 s by closing the other end."""
    ours, theirs = socket.socketpair()
    if data:
        theirs.sendall(data)
    reader = serve._Until(ours, time.monotonic() + deadline_in)
    got: list[object] = []

    def read() -> None:
        try:
            got.append(reader.read(100))
        except Exception as e:
            got.append(e)

    start = time.monotonic()
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(3)
    theirs.close()
    t.join(3)
    ours.close()
    return got[0], time.monotonic() - start


def test_a_read_past_the_deadline_times_out_at_once():
    got, took = until(-0.5, b"GET / HTTP/1.1\r\n")
    assert isinstance(got, TimeoutError) and took < 1


def test_a_read_waits_for_what_is_left_of_the_deadline_and_no_more():
    got, took = until(0.3)
    assert isinstance(got, TimeoutError) and 0.25 < took < 0.9


def test_a_read_before_the_deadline_gets_what_was_sent():
    got, _ = until(0.6, b"GET / HTTP/1.1\r\n")
    assert got == b"GET / HTTP/1.1\r\n"


def test_a_failed_reading_is_said_in_one_bounded_line_and_the_next_one_done(capsys):
    calls = []

    def produce() -> bytes:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("x" * 1000)
        return b"shmdoctor_up 1\n"

    latest = serve.Latest()
    reader = serve.Reader(produce, latest, 0.01)
    assert reader.daemon  # it never keeps the process from exiting
    reader.start()
    try:
        assert latest.get(5, False) == b"shmdoctor_up 1\n"
    finally:
        reader.stop()
        reader.join(5)
    assert not reader.is_alive()
    [line] = [x for x in capsys.readouterr().err.splitlines() if x]
    assert line == ("shmdoctor: error: a reading failed: RuntimeError: " + "x" * 1000)[:300]


@pytest.fixture
def server(monkeypatch):
    """A server of 2 slots on loopback, its first reading not done: (server, latest)."""
    monkeypatch.setattr(serve, "slots", lambda: 2)
    latest = serve.Latest()
    server = serve.serve("127.0.0.1", 0, latest, wait=0.2)
    yield server, latest
    stopping = threading.Thread(target=server.shutdown)  # seen when its loop next wakes: a connection wakes it
    stopping.start()
    while stopping.is_alive():
        socket.create_connection(server.server_address[:2], timeout=5).close()
        stopping.join(0.05)
    server.server_close()


def connect(server) -> socket.socket:
    s = socket.create_connection(server.server_address[:2], timeout=5)
    time.sleep(0.05)  # accepted, and its slot taken, before the next one
    return s


def dropped(s: socket.socket, within: float = 0.3) -> bool:
    s.settimeout(within)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def settled(server, expected: int) -> int:
    for _ in range(100):
        if server._open == expected:
            break
        time.sleep(0.01)
    return server._open


def test_the_oldest_connection_still_sending_is_dropped_for_a_new_one(server):
    server, _ = server
    a, b = connect(server), connect(server)
    assert not dropped(a, 0.1)  # two slots: both kept
    c = connect(server)
    assert dropped(a) and not dropped(b, 0.1)  # the third takes the oldest one's slot
    d = connect(server)
    assert dropped(b) and not dropped(c, 0.1)
    for s in (a, b, c, d):
        s.close()
    assert settled(server, 0) == 0  # every slot back


def test_a_connection_past_the_slots_is_closed_when_every_one_is_being_answered(server, capsys):
    server, latest = server
    answers: list[int] = []

    def scrape() -> None:
        try:
            with DIRECT.open(f"http://127.0.0.1:{server.server_address[1]}/metrics", timeout=5) as r:
                answers.append(r.status)
        except urllib.error.HTTPError as e:
            answers.append(e.code)

    threads = [threading.Thread(target=scrape) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.1)  # both sent their request and wait for the first reading
    late = connect(server)
    assert dropped(late)
    for t in threads:
        t.join(5)
    assert answers == [503, 503] and capsys.readouterr().err == ""


def test_the_answer_waits_for_the_first_reading_then_is_the_latest_plain_or_gzipped(server):
    server, latest = server
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    with pytest.raises(urllib.error.HTTPError) as refused:
        DIRECT.open(url, timeout=5)
    assert refused.value.code == 503  # Service Unavailable: no reading yet
    latest.set(b"shmdoctor_up 1\n")
    with DIRECT.open(url, timeout=5) as r:
        assert (r.status, r.headers.get("Content-Encoding"), r.read()) == (200, None, b"shmdoctor_up 1\n")
    asked = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with DIRECT.open(asked, timeout=5) as r:
        assert (r.status, r.headers.get("Content-Encoding")) == (200, "gzip")
        assert gzip.decompress(r.read()) == b"shmdoctor_up 1\n"
    [http] = [t for t in threading.enumerate() if t.name == "shmdoctor-http"]
    assert http.daemon and server.daemon_threads  # neither keeps the process from exiting


@pytest.fixture
def idle():
    """A server bound on loopback and never started: its methods called by the test."""
    server = serve._Server(("127.0.0.1", 0), serve.BaseHTTPRequestHandler)
    yield server
    server.server_close()


def test_a_clients_fault_is_no_news_and_an_answers_fault_one_bounded_line(idle, capsys):
    server = idle
    for fault in (ConnectionResetError(errno.ECONNRESET, "reset"), BrokenPipeError(), TimeoutError()):
        try:
            raise fault
        except OSError:
            server.handle_error(None, ("127.0.0.1", 1))
    assert capsys.readouterr().err == ""
    try:
        raise ValueError("y" * 1000)
    except ValueError:
        server.handle_error(None, ("127.0.0.1", 1))
    [line] = capsys.readouterr().err.splitlines()
    assert line == ("shmdoctor: error: answering ('127.0.0.1', 1): ValueError: " + "y" * 1000)[:300]


@pytest.mark.parametrize(
    "code, waits",
    [(errno.EMFILE, True), (errno.ENFILE, True), (errno.ENOBUFS, True), (errno.ENOMEM, True),
     (errno.ECONNABORTED, False)],
)  # fmt: skip
def test_out_of_descriptors_accept_waits_before_it_is_tried_again(idle, monkeypatch, code, waits):
    server = idle
    slept: list[float] = []

    class Refusing:  # the listening socket, its accept failing as the kernel fails it
        def accept(self):
            raise OSError(code, "accept")

    real = server.socket
    monkeypatch.setattr(serve.time, "sleep", slept.append)
    server.socket = Refusing()
    try:
        with pytest.raises(OSError) as raised:
            server.get_request()
    finally:
        server.socket = real
    assert raised.value.errno == code and slept == ([0.05] if waits else [])


def test_a_port_in_use_is_one_usage_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=rf"--listen 127\.0\.0\.1:{port}: cannot listen there: "):
            serve.serve("127.0.0.1", port, serve.Latest(), wait=0)


def test_a_request_that_does_not_arrive_in_time_is_dropped(server, monkeypatch):
    server, _ = server
    monkeypatch.setattr(serve, "REQUEST_S", 0.3)
    s = connect(server)
    s.sendall(b"GET /metrics HTTP/1.1\r\n")  # never the end of its headers
    assert not dropped(s, 0.1)  # kept while its time lasts
    assert dropped(s, 3)
    s.close()


def test_a_new_connection_drops_the_oldest_sending_one_while_a_dropped_ones_thread_still_ends(idle):
    """Between a drop and the end of the dropped connection's thread, more are open than the slots: a new one still
    takes a slot from the oldest one sending, never one more."""
    server = idle
    server.slots = 2
    oldest, oldest_peer = socket.socketpair()
    newer, newer_peer = socket.socketpair()
    new, new_peer = socket.socketpair()
    server._open, server._sending = 3, {oldest: 1.0, newer: 2.0}
    server.process_request(new, ("127.0.0.1", 1))
    assert dropped(oldest_peer) and not dropped(newer_peer, 0.05)
    new_peer.close()  # its handler reads the end of the connection and is done
    assert settled(server, 3) == 3
    for s in (oldest, oldest_peer, newer, newer_peer):
        s.close()
