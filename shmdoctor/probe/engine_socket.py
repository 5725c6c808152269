"""A Docker-API engine on a unix socket, read with the standard library: the three calls an audit makes (the
version, the list of containers, each inspect), without the Docker SDK, whose import (requests, urllib3, paramiko)
cost an audit more than all its engine's answers. Its methods and errors are named as the SDK's (APIClient.version,
.containers, .inspect_container; NotFound, APIError, DockerException), so that docker.Engine calls either alike. Every
other address (tcp with TLS, ssh) and every other call (exec, logs, events) goes through the SDK.

Connections are kept open and reused, one per thread in flight (`connections` at most): an engine answers an inspect
in well under a millisecond, about what a new connection costs. HTTP/1.1 is read here, bounded, as the engine speaks
it: http.client would import ssl and email for it.
"""

from __future__ import annotations

import json
import queue
import socket
from typing import Any
from urllib.parse import quote, urlencode

from ..limits import MAX_JSON_BYTES


class DockerException(Exception):
    """Any failure of the engine's conversation."""


class APIError(DockerException):
    def __init__(self, status_code: int, explanation: str) -> None:
        super().__init__(f"{status_code} {explanation}")
        self.status_code, self.explanation = status_code, explanation


class NotFound(APIError):
    """404: no such container (any more)."""


MAX_HEAD = 64 * 1024  # bytes of one line of an answer's head, and of its lines together: far above an engine's


def _bound(size: int) -> None:
    if size > MAX_JSON_BYTES:
        raise ValueError(f"an answer of more than {MAX_JSON_BYTES} bytes")


class _Connection:
    """One kept-alive HTTP/1.1 connection to the socket: a GET, its status and its body (by Content-Length, in
    chunks, or to the end where the engine closes). http.client would do it, at the cost of importing ssl and email
    (a third of an audit's own start)."""

    def __init__(self, path: str, timeout: float) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.file = self.sock.makefile("rb")
        self.open = True

    def get(self, url: str) -> tuple[int, str, bytes]:
        """(status, reason, body); raises OSError or ValueError on a broken answer."""
        self.sock.sendall(f"GET {url} HTTP/1.1\r\nHost: docker\r\n\r\n".encode())
        version, _, rest = self._line().partition(b" ")
        code, _, reason = rest.partition(b" ")
        if not version.startswith(b"HTTP/1.") or not code.isdigit():
            raise ValueError("not an HTTP answer")
        headers, size = {}, 0
        while line := self._line():
            size += len(line)
            if size > MAX_HEAD:
                raise ValueError("an answer's head of more than 64 KiB")
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip().lower()
        if headers.get(b"connection") == b"close" or version == b"HTTP/1.0":
            self.open = False
        if headers.get(b"transfer-encoding") == b"chunked":
            body = self._chunks()
        elif b"content-length" in headers:
            body = self._exactly(int(headers[b"content-length"]))
        else:
            body, self.open = self.file.read(MAX_JSON_BYTES + 1), False
            _bound(len(body))
        return int(code), reason.decode("latin-1").strip(), body

    def _line(self) -> bytes:
        line = self.file.readline(MAX_HEAD + 1)
        if not line.endswith(b"\n"):
            raise ValueError("the engine closed the connection" if not line else "a line of more than 64 KiB")
        return line.rstrip(b"\r\n")

    def _exactly(self, n: int, before: int = 0) -> bytes:
        if n < 0:
            raise ValueError("a negative length in the answer")
        _bound(before + n)
        data = self.file.read(n)
        if len(data) < n:
            raise ValueError("the engine closed the connection")
        return data

    def _chunks(self) -> bytes:
        body = bytearray()
        while size := int(self._line().split(b";")[0], 16):
            body += self._exactly(size, len(body))
            self._line()  # the chunk's CRLF
        while self._line():  # trailers, then the blank line
            pass
        return bytes(body)

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class SocketAPI:
    """GET-only client of the engine at the unix socket `path`; each read bounded by `timeout` seconds (the caller
    bounds their sum), each answer by MAX_JSON_BYTES."""

    def __init__(self, path: str, timeout: float, connections: int) -> None:
        self.path, self.timeout = path, timeout
        self._idle: queue.LifoQueue[_Connection] = queue.LifoQueue(connections)
        self._idle.put(_Connection(path, timeout))  # an engine that is not there is said at once, as the SDK does

    def _get(self, url: str) -> Any:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = _Connection(self.path, self.timeout)
        try:
            status, reason, body = conn.get(url)
        except (OSError, ValueError) as e:
            conn.close()
            raise DockerException(str(e) or type(e).__name__) from None
        try:
            if not conn.open:
                raise queue.Full
            self._idle.put_nowait(conn)
        except queue.Full:
            conn.close()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            raise DockerException(f"the answer to GET {url[:80]} is not JSON") from None
        except RecursionError:  # C's decoder keeps Python's recursion limit: [[[[... 100,000 deep
            raise DockerException(
                f"the engine answered GET {url.split('?')[0][:80]} with JSON nested deeper than shmdoctor reads"
            ) from None
        if status >= 400:
            message = data.get("message") if isinstance(data, dict) else None
            error = NotFound if status == 404 else APIError
            raise error(status, str(message or reason)[:300])
        return data

    def version(self) -> Any:
        return self._get("/version")

    def containers(self, all: bool = False, filters: dict[str, list[str]] | None = None) -> Any:
        query = {"all": "1" if all else "0", **({"filters": json.dumps(filters)} if filters else {})}
        return self._get(f"/containers/json?{urlencode(query)}")

    def inspect_container(self, ref: str) -> Any:
        return self._get(f"/containers/{quote(ref, safe='')}/json")

    def close(self) -> None:
        while not self._idle.empty():
            self._idle.get_nowait().close()
