"""--listen as docs/commands/exporter.md writes it: ADDR:PORT, and :PORT with no host given for every address
(`--listen :9787 is every address`), served for real: the kernel says where the socket is bound, and a scrape
through another address of this machine than loopback gets the page."""

from __future__ import annotations

import contextlib
import socket
import urllib.request

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.exporter import serve


@pytest.mark.parametrize(
    "text,address",
    [
        (":9787", ("0.0.0.0", 9787)),  # no host: every address
        ("127.0.0.1:9787", ("127.0.0.1", 9787)),
        ("[::1]:9787", ("::1", 9787)),
        ("[::]:9787", ("::", 9787)),
        ("localhost:1", ("localhost", 1)),
        ("0.0.0.0:65535", ("0.0.0.0", 65535)),
    ],
)
def test_listen_addresses_as_the_manual_writes_them(text, address):
    assert serve.parse(text) == address


@pytest.mark.parametrize(
    "text",
    # a name is no address, whether it sorts before "localhost" or after; a port past 65535 however many digits;
    # an address with one bracket of two
    ["9787", ":0", ":65536", ":65537", ":99999", "host:9787", "metrics:9787", "[::1]9787", "::1:9787x", "[::1:9787",
     "::1]:9787"],
)  # fmt: skip
def test_what_is_no_listen_address_is_a_usage_error(text):
    with pytest.raises(UsageError, match=r"--listen"):
        serve.parse(text)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def outward_address() -> str | None:
    """This machine's address on the way out (no packet sent: a UDP socket is only connected), if not loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s, contextlib.suppress(OSError):
        s.connect(("192.0.2.1", 9))  # TEST-NET-1: routed by the default route, never reached
        found = s.getsockname()[0]
        return None if found.startswith("127.") else found
    return None


def test_no_host_given_serves_on_every_address():
    latest = serve.Latest()
    latest.set(b"shmdoctor_targets 1.0\n")
    server = serve.serve(*serve.parse(f":{free_port()}"), latest, wait=5)
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy of the environment
    try:
        host, port = server.socket.getsockname()[:2]
        assert host == "0.0.0.0"
        for address in filter(None, ("127.0.0.1", outward_address())):
            with direct.open(f"http://{address}:{port}/metrics", timeout=10) as answer:
                assert answer.read() == b"shmdoctor_targets 1.0\n"
    finally:
        server.shutdown()
        server.server_close()
