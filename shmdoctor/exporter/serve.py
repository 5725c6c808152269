"""Serving: --listen ADDR:PORT, a thread that reads every target every --interval seconds and renders the metrics,
and an HTTP server that answers each scrape with the latest rendering.

A scrape therefore costs the same with 200 containers as with one, never waits on the engine or on /proc, and
cannot pile up readings when several Prometheus servers scrape at once. The reading it serves is at most
--interval seconds old (Prometheus scrapes every 15 s or more).

Clients are hostile too: a request (its line and headers) must arrive within REQUEST_S, connections are at most
`slots()` at once (each a thread and a descriptor), and at that bound the oldest one still sending its request is
dropped for the new one: a slowloris holds nothing for long, and a scrape, sent at once, always gets in. Out of
descriptors, accept waits instead of spinning; a client that resets or times out is no news in the log.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import ipaddress
import re
import resource
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import UsageError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text exposition format
REQUEST_S = 10.0  # seconds for a request's line and headers to arrive, all of them (Prometheus sends them at once)
MAX_CONNECTIONS = 256  # at once; fewer where the descriptor limit is low (half of it, the rest for the readings)


def parse(text: str) -> tuple[str, int]:
    """'127.0.0.1:9787', '[::1]:9787', ':9787' (every address) -> (address, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not re.fullmatch(r"[0-9]{1,5}", port) or not 0 < int(port) < 65536:  # ASCII: '²' is a digit
        raise UsageError(f"--listen {text!r}: expected ADDR:PORT, e.g. 127.0.0.1:9787, [::1]:9787 or :9787")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if host and host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(f"--listen {text!r}: {host!r} is not an IP address") from None
    return host or "0.0.0.0", int(port)


QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")  # RFC 9110's qvalue, ASCII
MAX_CODINGS = 64  # of an Accept-Encoding header read


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding header lets gzip be sent (RFC 9110, 12.5.3): gzip (or x-gzip) named with a q above
    0, else `*` with one; `gzip;q=0` refuses it. A qvalue that is not one is q=0: plain text is always acceptable."""
    named: float | None = None
    anything: float | None = None
    for part in header.split(",", MAX_CODINGS)[:MAX_CODINGS]:
        coding, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                q = float(value.strip()) if QVALUE.fullmatch(value.strip()) else 0.0
        coding = coding.lower()
        if coding in ("gzip", "x-gzip"):
            named = max(named or 0.0, q)
        elif coding == "*":
            anything = q
    return named > 0 if named is not None else anything is not None and anything > 0


class Latest:
    """The latest rendering, plain and gzipped, set by the reading thread and read by every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._body = self._gzipped = b""

    def set(self, body: bytes) -> None:
        gzipped = gzip.compress(body, compresslevel=6)
        with self._lock:
            self._body, self._gzipped = body, gzipped
        self._ready.set()

    def get(self, wait: float, gzipped: bool) -> bytes | None:
        if not self._ready.wait(wait):
            return None
        with self._lock:
            return self._gzipped if gzipped else self._body


class Reader(threading.Thread):
    """Reads and renders every `interval` seconds: `produce()` returns the metrics text."""

    def __init__(self, produce: Callable[[], bytes], latest: Latest, interval: float) -> None:
        super().__init__(name="shmdoctor-reader", daemon=True)
        self.produce, self.latest, self.interval = produce, latest, interval
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.latest.set(self.produce())
            except Exception as e:  # a fault in one reading must not end them all: said, and the next one tried
                print(f"shmdoctor: error: a reading failed: {type(e).__name__}: {e}"[:300], file=sys.stderr)
            self._stopped.wait(self.interval)

    def stop(self) -> None:
        self._stopped.set()


def slots(soft: int | None = None) -> int:
    """Connections at once: MAX_CONNECTIONS, or half the descriptor limit (`soft`, this process's when None) where
    that is fewer, the other half for the readings; never fewer than 4."""
    if soft is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(4, min(MAX_CONNECTIONS, soft // 2))


class _Until(io.RawIOBase):
    """A connection's bytes, read before a deadline: each read waits at most what is left of it."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class _Server(ThreadingHTTPServer):
    """Bounded: at most `slots()` connections, each with REQUEST_S to send its request; see the module's text."""

    daemon_threads = True
    request_queue_size = 128  # the listen backlog (socketserver: 5)

    def __init__(self, *args, **kwargs) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._sending: dict[socket.socket, float] = {}  # connections still sending their request: since when
        self.slots = slots()
        super().__init__(*args, **kwargs)

    def get_request(self):
        try:
            return super().get_request()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                time.sleep(0.05)  # out of descriptors: the listening socket stays readable, so wait, never spin
            raise

    def process_request(self, request, client_address) -> None:
        with self._lock:
            if self._open >= self.slots:
                if not self._sending:  # every one is being answered: this one waits its turn elsewhere
                    self.shutdown_request(request)
                    return
                oldest = min(self._sending, key=self._sending.__getitem__)
                del self._sending[oldest]
                with contextlib.suppress(OSError):
                    oldest.shutdown(socket.SHUT_RDWR)  # its thread's read ends at once: the slot comes back
            self._open += 1
            self._sending[request] = time.monotonic()
        super().process_request(request, client_address)

    def sent(self, request) -> None:
        with self._lock:
            self._sending.pop(request, None)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open -= 1
                self._sending.pop(request, None)

    def handle_error(self, request, client_address) -> None:
        e = sys.exc_info()[1]
        if isinstance(e, OSError):  # a reset, a broken pipe, a timeout: the client's business
            return
        print(f"shmdoctor: error: answering {client_address}: {type(e).__name__}: {e}"[:300], file=sys.stderr)


def serve(address: str, port: int, latest: Latest, wait: float) -> ThreadingHTTPServer:
    """Serve `latest` at http://address:port/metrics (any path) in a thread; returned to be shut down."""

    class Handler(BaseHTTPRequestHandler):
        server: _Server

        def setup(self) -> None:
            super().setup()
            self.rfile = io.BufferedReader(_Until(self.connection, time.monotonic() + REQUEST_S))

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.server.sent(self.connection)
            self.connection.settimeout(REQUEST_S)  # to write the answer: a client that reads nothing lets go
            gzipped = accepts_gzip(self.headers.get("Accept-Encoding", ""))
            body = latest.get(wait, gzipped)
            if body is None:
                self.send_error(503, "the first reading is not done yet")
                return
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            if gzipped:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's name)
            pass  # a scrape every few seconds is no news

    class Server(_Server):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

    try:
        server = Server((address, port), Handler)
    except OSError as e:
        raise UsageError(f"--listen {address}:{port}: cannot listen there: {e.strerror}") from None
    threading.Thread(target=server.serve_forever, name="shmdoctor-http", daemon=True).start()
    return server
