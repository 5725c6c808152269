"""A Docker-API engine on a unix socket, read with the standard library: the three calls an audit makes (the
version, the list of containers, each inspect), without the Docker SDK, whose import (requests, urllib3, paramiko)
cost an audit more than all its engine's answers. Its methods and errors are named as the SDK's (APIClient.version,
.containers, .inspect_container; NotFound, APIError, DockerException), so that docker.Engine calls either alike. Every
other address (tcp with TLS, ssh) and every other call (exec, logs, events) goes through the SDK.

Connections are kept open and reused, one per thread in flight (`connections` at most): an engine answers an inspect
in well under a millisecond, about what a new connection costs.
"""

from __future__ import annotations

import http.client
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


class _Connection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)  # the Host header: the engine ignores it on a socket
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class SocketAPI:
    """GET-only client of the engine at the unix socket `path`; each read bounded by `timeout` seconds (the caller
    bounds their sum), each answer by MAX_JSON_BYTES."""

    def __init__(self, path: str, timeout: float, connections: int) -> None:
        self.path, self.timeout = path, timeout
        self._idle: queue.LifoQueue[_Connection] = queue.LifoQueue(connections)
        first = _Connection(path, timeout)
        first.connect()  # an engine that is not there is said at once, as the SDK does
        self._idle.put(first)

    def _get(self, url: str) -> Any:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = _Connection(self.path, self.timeout)
        try:
            conn.request("GET", url)
            answer = conn.getresponse()
            body = answer.read(MAX_JSON_BYTES + 1)
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise DockerException(str(e) or type(e).__name__) from None
        if len(body) > MAX_JSON_BYTES or not answer.isclosed():
            conn.close()
            raise DockerException(f"an answer of more than {MAX_JSON_BYTES} bytes")
        try:
            self._idle.put_nowait(conn)
        except queue.Full:
            conn.close()
        try:
            data = json.loads(body) if body else None
        except ValueError:
            raise DockerException(f"the answer to GET {url[:80]} is not JSON") from None
        if answer.status >= 400:
            message = data.get("message") if isinstance(data, dict) else None
            error = NotFound if answer.status == 404 else APIError
            raise error(answer.status, str(message or answer.reason)[:300])
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
