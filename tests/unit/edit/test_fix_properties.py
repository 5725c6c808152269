"""lint --fix on generated compose files (test_inplace's shapes: each quoting of shm_size, comments, anchors, merge
keys, flow and block environments, tmpfs lists, LF or CRLF) keeps what it does not fix (issue 39 item 4): every key
of the file is still there with its value (but the sizes fixed), every comment line too, each line ends as the
file's did, the mode stays, and a second --fix writes nothing."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from shmdoctor.cli import main
from tests.unit.edit.test_inplace import LOADER, compose_files

FIXED_KEYS = {"shm_size", "mem_limit", "memory", "tmpfs"}  # what --fix may write; the rest is the user's


def leaves(node, path=()) -> dict[tuple, object]:
    """Each scalar of a parsed file by its path of keys and indexes (merge keys resolved, as compose reads them)."""
    if isinstance(node, dict):
        return {k: v for key, value in node.items() for k, v in leaves(value, (*path, str(key))).items()}
    if isinstance(node, list):
        return {k: v for i, value in enumerate(node) for k, v in leaves(value, (*path, i)).items()}
    return {path: node}


def parsed(text: str) -> dict[tuple, object]:
    return leaves(YAML(typ="safe", pure=True).load(text))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=compose_files(), mode=st.sampled_from([0o644, 0o600, 0o640, 0o664, 0o755]))
def test_fix_keeps_every_key_comment_line_ending_and_the_mode_and_a_second_fix_writes_nothing(text, mode):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "compose.yml"
        path.write_bytes(text.encode())
        os.chmod(path, mode)
        main(["lint", str(path), "--fix", *LOADER])
        after = path.read_bytes().decode()
        assert stat.S_IMODE(os.stat(path).st_mode) == mode
        crlf = "\r\n" in text
        assert after.count("\n") == (after.count("\r\n") if crlf else after.count("\n")) and ("\r" in after) == crlf
        comments = [line.strip() for line in text.splitlines() if line.strip().startswith("#")]
        assert all(c in after for c in comments), (text, after)
        before, now = parsed(text), parsed(after)
        for key, value in before.items():
            if not FIXED_KEYS & {str(k) for k in key}:
                assert now.get(key) == value, (key, text, after)
        main(["lint", str(path), "--fix", *LOADER])
        assert path.read_bytes().decode() == after
