"""--fix keeps a file's line endings: a file saved with CRLF (every line, one line or hundreds) gets CRLF on the lines
it adds; a file of LF lines, of mixed ones, or of no line break at all gets none it did not have."""

from __future__ import annotations

import json5
import pytest

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin


def fixed(tmp_path, name: str, text: bytes) -> bytes:
    path = tmp_path / name
    path.write_bytes(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    return path.read_bytes()


@pytest.mark.parametrize("end", [b"", b"\r\n"])
def test_a_one_line_devcontainer_keeps_its_line_ending(tmp_path, end):
    after = fixed(tmp_path, "devcontainer.json", b'{"image": "pytorch/pytorch"}' + end)
    assert json5.loads(after.decode())["runArgs"] == ["--shm-size=1536m"]
    assert after.endswith(b'"image": "pytorch/pytorch"}' + end)
    if end:
        assert after.count(b"\n") == after.count(b"\r\n") > 1  # the line it added too
    else:
        assert b"\r" not in after


def test_a_long_crlf_file_gets_crlf_on_the_line_added(tmp_path):
    comments = b"".join(b"# note %d\r\n" % i for i in range(300))  # more lines than CPython's cached small ints
    text = comments + b"services:\r\n  t:\r\n    image: pytorch/pytorch\r\n"
    assert fixed(tmp_path, "compose.yaml", text) == text + b"    shm_size: 1536m\r\n"


def test_a_file_of_mixed_endings_gets_lf_on_the_line_added(tmp_path):
    text = b"services:\r\n  t:\n    image: pytorch/pytorch\n"
    assert fixed(tmp_path, "compose.yaml", text) == text + b"    shm_size: 1536m\n"
