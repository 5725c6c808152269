"""Reading a log of any size for `explain`: only the lines that hold one of the catalogue's anchors come back, with
their numbers, so memory stays flat whatever the size. GNU grep (-F: many fixed strings in one pass) does the reading
where it is installed; a plain Python loop otherwise (slower, same lines)."""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import re
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import IO, BinaryIO

from ..diagnose.scan import MAX_LINE, Prefilter, Scanner, anchors
from ..errors import UsageError
from .regular import open_regular

# grep -n -T: 'N:\t' a match, 'N-\t' a line of context ('--' parts groups); through uniq -c, each after its count
_NUMBERED = re.compile(rb" {0,40}(?P<n>[0-9]{1,20})[:-]\t(?P<count>)")
_COUNTED = re.compile(rb" {0,40}(?P<count>[0-9]{1,20}) {1,40}(?P<n>[0-9]{1,20})[:-]\t")
CHUNK = 2**20  # bytes read at a time by the copy that feeds grep


def open_log(path: str, timeout: float | None = None) -> BinaryIO:
    """The file, or stdin for '-': one-line errors for what cannot be read, and no wait on a terminal. With a
    timeout, a read past it (timeout seconds from now) raises TimeoutError: stdin fed without end ends."""
    if path == "-":
        if os.isatty(0):
            raise UsageError(
                "no log on stdin: give a FILE, pipe a log in (`... 2>&1 | shmdoctor explain`), or --container"
            )
        f: BinaryIO = os.fdopen(os.dup(0), "rb")
    else:
        f = open_regular(path)  # a FIFO or a device (/dev/zero) would block or never end
    if timeout is None:
        return f
    return io.BufferedReader(_Until(f, time.monotonic() + timeout))


class _Until(io.RawIOBase):
    """A file's bytes read before a deadline: each read waits at most what is left of it."""

    def __init__(self, f: BinaryIO, deadline: float) -> None:
        self.f, self.deadline = f, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([self.f], [], [], left)[0]:
            raise TimeoutError("the log did not end in time")
        return os.readv(self.f.fileno(), [buffer])

    def close(self) -> None:
        self.f.close()
        super().close()


SNIFF = 8192  # bytes of the log's start that tell text from the rest
_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


def not_text(f: BinaryIO) -> str | None:
    """What the log is when it is no text to read: empty, or binary (NUL bytes in more than 1% of its start); None
    for text, stray bad bytes included, and for UTF-16 text (read as such: readable()). Looks, never consumes."""
    head = _head(f)
    if not head:
        return "empty: nothing to explain"
    nul = head.count(0)
    if utf16(head) is None and nul * 100 > len(head):
        return f"binary, not a text log ({nul} NUL bytes in its first {len(head)})"
    return None


def utf16(head: bytes) -> str | None:
    """The codec of a log whose start is `head` when it is UTF-16: a NUL in every other byte, one side (what logs
    say is mostly ASCII: 'E\\0r\\0r\\0'), or a byte-order mark before text whose line breaks are UTF-16's (before
    bytes that are not UTF-8, in a start without one); else None. A mark before 8-bit text is no proof: two stray
    bytes of its first line, read past as any other."""
    bom = _BOMS.get(head[:2])
    body = head[2:] if bom else head
    odd, even = body[1::2].count(0), body[0::2].count(0)
    if len(body) >= 16 and max(odd, even) >= 0.3 * len(body) / 2 > 6 * min(odd, even):
        return "utf-16-le" if odd > even else "utf-16-be"
    if bom is None:
        return None
    if b"\n" in body:
        wide = "\n".encode(bom)  # a UTF-16 line break: its bytes at an even offset
        breaks = sum(body[i : i + 2] == wide for i in range(0, len(body) - 1, 2))
        return bom if 2 * breaks >= body.count(b"\n") else None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(body, final=len(body) < SNIFF - 2)
    except UnicodeDecodeError:
        return bom
    return None


def readable(f: BinaryIO) -> BinaryIO:
    """The log as the bytes explain reads: the file itself, or a UTF-16 log's text as UTF-8, decoded as it is read
    (its lines and their numbers as they are; memory stays flat)."""
    head = _head(f)
    codec = utf16(head)
    if codec is None:
        return f
    if _BOMS.get(head[:2]):
        f.read(2)
    return io.BufferedReader(_Utf8(f, codec))


def _head(f: BinaryIO) -> bytes:
    return f.peek(SNIFF)[:SNIFF] if hasattr(f, "peek") else b""


class _Utf8(io.RawIOBase):
    """A UTF-16 stream's text as UTF-8 bytes (a byte that is no UTF-16 read as U+FFFD)."""

    def __init__(self, f: BinaryIO, codec: str) -> None:
        self.f, self.decoder = f, codecs.getincrementaldecoder(codec)("replace")
        self.pending, self.at = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self.at == len(self.pending):
            raw = self.f.read1(CHUNK) if hasattr(self.f, "read1") else self.f.read(CHUNK)
            self.pending, self.at = self.decoder.decode(raw, final=not raw).encode("utf-8", "replace"), 0
            if not raw:
                break
        n = min(len(buffer), len(self.pending) - self.at)
        buffer[:n] = self.pending[self.at : self.at + n]
        self.at += n
        return n


def _skip_rest(read) -> None:
    """Drop the remainder of an overlong line."""
    while True:
        part = read(MAX_LINE)
        if not part or part.endswith(b"\n"):
            return


def _python_lines(f: BinaryIO, keys: Prefilter) -> Iterator[tuple[int, bytes, int]]:
    """Each candidate line, and the line after it (the rest of a message a terminal or a viewer wrapped), as
    (number, line, repeats): a run of the same candidate line is one, with its count."""
    number, after = 0, False
    run: list = []  # [number, line, repeats] of the candidate line being repeated
    while True:
        raw = f.readline(MAX_LINE)
        if not raw:
            break
        number += 1
        if not raw.endswith(b"\n"):
            _skip_rest(f.readline)
        if run and raw == run[1]:
            run[2] += 1
            continue
        if run:
            yield run[0], run[1], run[2]
            run = []
        candidate = keys.holds(raw)
        if candidate:
            run = [number, raw, 1]
        elif after:
            yield number, raw, 1
        after = candidate
    if run:
        yield run[0], run[1], run[2]


def _cut_lines(f: BinaryIO, out: IO[bytes]) -> None:
    """Copy the log with each line cut to its first MAX_LINE bytes, its newline kept (so grep numbers lines alike):
    grep holds a whole line in memory, and a file without newlines is one line (2 GB of it took 4.2 GB)."""
    run, skipping = 0, False  # bytes of the current line already copied; past MAX_LINE, looking for its end
    while chunk := f.read(CHUNK):
        pos, n = 0, len(chunk)
        while pos < n:
            if skipping:
                nl = chunk.find(b"\n", pos)
                if nl < 0:
                    break
                out.write(b"\n")
                run, skipping, pos = 0, False, nl + 1
                continue
            end = min(n, pos + MAX_LINE - run)
            nl = chunk.rfind(b"\n", pos, end)  # every line before the last newline in reach fits
            if nl >= 0:
                out.write(chunk[pos : nl + 1])
                run, pos = 0, nl + 1
            else:
                out.write(chunk[pos:end])
                run, skipping, pos = run + end - pos, end < n, end


def _grep_lines(f: BinaryIO, keys: list[bytes], grep: str, uniq: str | None) -> Iterator[tuple[int, bytes, int]]:
    """grep's candidate lines as (number, line, repeats); through uniq where it is installed, which makes a run of
    the same line one (grep -T puts a tab between a line's number and its text: uniq -f 1 compares the text)."""
    # -A 1: the line after each candidate too (a wrapped message's rest), printed 'N-text', groups parted by '--'
    argv = [grep, "-F", "-n", "-T", "-a", "-A", "1", *[arg for k in keys for arg in ("-e", k.decode())]]
    env = {"LC_ALL": "C"}
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    runs = None
    if uniq:
        runs = subprocess.Popen(
            [uniq, "-c", "-f", "1"], stdin=proc.stdout, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        proc.stdout.close()  # type: ignore[union-attr]  # uniq's now: grep ends on a pipe uniq left
    failed: list[OSError] = []

    def feed() -> None:
        assert proc.stdin is not None
        try:
            _cut_lines(f, proc.stdin)
        except BrokenPipeError:
            pass  # grep ended (or was ended): what it said decides
        except OSError as e:
            failed.append(e)
        finally:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    feeder = threading.Thread(target=feed, name="shmdoctor-log-feed", daemon=True)
    feeder.start()
    read = runs.stdout if runs else proc.stdout
    numbered = _COUNTED if runs else _NUMBERED
    try:
        assert read is not None
        while True:
            raw = read.readline(MAX_LINE + 64)
            if not raw:
                break
            if not raw.endswith(b"\n"):
                _skip_rest(read.readline)
            m = numbered.match(raw)
            if m:
                yield int(m.group("n")), raw[m.end() :], int(m.group("count") or 1)
        feeder.join()
        if failed and isinstance(failed[0], TimeoutError):
            raise failed[0]
        if failed:
            raise UsageError(f"cannot read the log: {failed[0].strerror or failed[0]}")
        if proc.wait() > 1:  # 1: nothing matched
            err = proc.stderr.read(500).decode(errors="replace").strip() if proc.stderr else ""
            raise UsageError(f"cannot read the log: {err.splitlines()[-1] if err else 'grep failed'}")
        if runs and runs.wait():
            raise UsageError("cannot read the log: uniq failed")
    finally:
        for child in (proc, runs):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()


def candidate_lines(f: BinaryIO) -> Iterator[tuple[int, bytes, int]]:
    """(number, line, repeats) of each candidate line and the line after it, runs of one line as one."""
    keys = anchors()
    grep = shutil.which("grep")
    if grep and _is_gnu(grep):
        return _grep_lines(f, [k.encode() for k in keys], grep, shutil.which("uniq"))
    return _python_lines(f, Prefilter(keys))


def _is_gnu(grep: str) -> bool:
    try:
        out = subprocess.run([grep, "--version"], capture_output=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"GNU grep" in out


def scan(f: BinaryIO) -> Scanner:
    """Every candidate line of the log through the catalogue."""
    scanner = Scanner()
    for number, line, repeats in candidate_lines(f):
        scanner.line(number, line, repeats)
    return scanner
