"""A container's log read as the engine sends it, larger than the cap: the end is kept (a failure's text is near
it), whatever the frames and wherever the reads cut them. Frames as the Engine API documents its stream format
(docs.docker.com/reference/api/engine, "Stream format": header [8]byte{STREAM_TYPE, 0, 0, 0, SIZE1..SIZE4}, the
size big-endian), stdout and stderr interleaved; with a terminal (tty) the stream is raw. The engine-facing read
(Engine.logs_tail) is tests/integration/docker's; these are its decisions without an engine."""

from __future__ import annotations

import struct

import pytest

from shmdoctor.probe.docker import LOG_READ, _unframed, kept_tail


def frame(stream: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(payload)) + payload


def cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


# 3,000 numbered lines (about 50 KiB), every third one on stderr; the last is the failure
LINES = [f"step {i}: loss {i % 97}.{i % 13}\n".encode() for i in range(2_999)] + [b"Bus error (core dumped)\n"]
STREAM = b"".join(frame(2 if i % 3 == 0 else 1, line) for i, line in enumerate(LINES))
TEXT = b"".join(LINES)


@pytest.mark.parametrize("size", [5, 8, 9, 4096, LOG_READ, len(STREAM)])
@pytest.mark.parametrize("cap", [1, 100, 4096, len(TEXT) - 1, len(TEXT), len(TEXT) + 1])
def test_a_log_past_the_cap_keeps_its_last_bytes_however_the_reads_cut_its_frames(size, cap):
    kept = kept_tail(_unframed(iter(cut(STREAM, size)), tty=False), cap)
    assert kept == TEXT[-cap:]
    assert kept.endswith(b"Bus error (core dumped)\n"[-cap:])


def test_a_frame_larger_than_the_cap_keeps_its_end():
    big = b"".join(b"%08d\n" % i for i in range(100_000))
    stream = frame(1, b"first\n") + frame(2, big) + frame(1, b"last\n")
    assert kept_tail(_unframed(iter(cut(stream, LOG_READ)), tty=False), 1000) == (big + b"last\n")[-1000:]


def test_with_a_terminal_the_stream_is_the_text_itself():
    raw = TEXT.replace(b"\n", b"\r\n")  # a terminal's line endings
    assert kept_tail(_unframed(iter(cut(raw, 4096)), tty=True), 5000) == raw[-5000:]
