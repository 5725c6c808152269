"""run's ring of its command's stderr, fed more than its cap as a command writes it (lines, a progress bar's \\r
redraws, one write larger than the cap): its tail is the stream's last bytes, from the first whole line kept, and
every byte is counted. The stream is built here and its end cut by hand: the oracle is the text, not the ring."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shmdoctor.wrap.ring import DEFAULT_CAP, Ring

LINES = b"".join(b"epoch %d batch %d loss 0.%03d\n" % (i // 100, i % 100, i % 997) for i in range(5_000))
FAILURE = b"RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.\n"


def fed(data: bytes, size: int, cap: int) -> Ring:
    ring = Ring(cap)
    for i in range(0, len(data), size):
        ring.append(data[i : i + size])
    return ring


def from_a_whole_line(data: bytes, cap: int) -> bytes:
    """The last cap bytes of data, without the part of a line cut at their start."""
    end = data[-cap:]
    return end if len(data) <= cap else end[end.index(b"\n") + 1 :]


@pytest.mark.parametrize("size", [1, 31, 4096, len(LINES) + len(FAILURE)])
@pytest.mark.parametrize("cap", [200, 4096, 65_536])
def test_past_the_cap_the_tail_is_the_last_whole_lines_and_every_byte_is_counted(size, cap):
    stream = LINES + FAILURE
    ring = fed(stream, size, cap)
    tail = ring.tail()
    assert tail == from_a_whole_line(stream, cap)
    assert tail.endswith(FAILURE) and len(tail) <= cap
    assert ring.total == len(stream) and ring.dropped == len(stream) - len(tail)


def test_within_the_cap_nothing_is_dropped():
    ring = fed(LINES[:1000], 7, 1000)
    assert ring.tail() == LINES[:1000] and ring.dropped == 0


def test_one_write_larger_than_the_cap_keeps_its_end():
    ring = Ring(100)
    ring.append(b"before\n")
    ring.append(LINES)
    assert ring.tail() == from_a_whole_line(LINES, 100) and ring.total == 7 + len(LINES)


def test_a_progress_bar_without_newlines_is_kept_as_its_last_bytes():
    bar = b"".join(b"\r%3d%%|" % (i % 101) + b"#" * (i % 50) for i in range(3_000))
    ring = fed(bar, 64, 512)
    assert ring.tail() == bar[-512:]  # no line to start from: the bytes themselves


def test_the_default_cap_is_four_mib_as_the_manual_says():
    assert DEFAULT_CAP == 4 * 2**20  # docs/commands/run.md: "kept in a 4 MiB ring in memory"


@settings(max_examples=100, deadline=None)
@example(cap=4, chunks=[b"ab", b"x\n", b"abcdefgh", b"x\n"])  # one chunk past the cap, among lines
@given(
    cap=st.integers(1, 64),
    chunks=st.lists(st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"")) | st.just(b"x\n"), max_size=40),
)
def test_what_the_ring_holds_is_what_its_tail_needs_and_no_more(cap, chunks):
    """Its memory: the bytes it holds are its size, no chunk is longer than the cap, and the oldest chunk is
    dropped once the newer ones hold the cap (module docstring); its tail the stream's, from a whole line."""
    ring, stream = Ring(cap), b""
    for chunk in chunks:
        ring.append(chunk)
        stream += chunk
        held = list(ring._chunks)
        assert ring.size == sum(map(len, held)) and all(len(c) <= cap for c in held)
        assert not held or ring.size - len(held[0]) < cap
        end = stream[-cap:]
        assert ring.tail() == (end[end.index(b"\n") + 1 :] if len(stream) > cap and b"\n" in end else end)
        assert ring.total == len(stream)
