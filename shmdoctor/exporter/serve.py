"""Serving: --listen ADDR:PORT, a thread that reads every target every --interval seconds and renders the metrics,
and an HTTP server that answers each scrape with the latest rendering.

A scrape therefore costs the same with 200 containers as with one, never waits on the engine or on /proc, and
cannot pile up readings when several Prometheus servers scrape at once. The reading it serves is at most
--interval seconds old (Prometheus scrapes every 15 s or more).
"""

from __future__ import annotations

import gzip
import ipaddress
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import UsageError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text exposition format


def parse(text: str) -> tuple[str, int]:
    """'127.0.0.1:9787', '[::1]:9787', ':9787' (every address) -> (address, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {text!r}: expected ADDR:PORT, e.g. 127.0.0.1:9787, [::1]:9787 or :9787")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if host and host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(f"--listen {text!r}: {host!r} is not an IP address") from None
    return host or "0.0.0.0", int(port)


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

    def get(self, wait: float, gzipped: bool = False) -> bytes | None:
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


def serve(address: str, port: int, latest: Latest, wait: float) -> ThreadingHTTPServer:
    """Serve `latest` at http://address:port/metrics (any path) in a thread; returned to be shut down."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
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

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

    try:
        server = Server((address, port), Handler)
    except OSError as e:
        raise UsageError(f"--listen {address}:{port}: cannot listen there: {e.strerror}") from None
    threading.Thread(target=server.serve_forever, name="shmdoctor-http", daemon=True).start()
    return server
