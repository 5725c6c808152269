"""--format github: GitHub Actions workflow commands, one annotation a finding at its file and line, then a summary;
escaped as GitHub documents it (the table in tests/data/github/escaping.json names its source)."""

from __future__ import annotations

import json
import re

import pytest

from shmdoctor.render.github import escape_data, escape_property
from tests.helpers import DATA, forked_cli

TABLE = json.loads((DATA / "github" / "escaping.json").read_text())
COMMAND = re.compile(r"^::(error|warning|notice) ((?:[a-z]+=[^,:]*)(?:,[a-z]+=[^,:]*)*)::(.*)$")


@pytest.mark.parametrize("case", TABLE["cases"], ids=lambda c: repr(c["text"]))
def test_escaping_follows_githubs_table(case):
    assert escape_data(case["text"]) == case["data"]
    assert escape_property(case["text"]) == case["property"]


def test_each_finding_is_an_annotation_at_its_file_and_line_then_a_summary():
    proc = forked_cli("lint", str(DATA / "suppress"), "--format", "github", "--fail-on", "warning")
    assert proc.returncode == 1 and proc.stderr == ""
    *commands, summary = proc.stdout.splitlines()
    assert summary == "shmdoctor lint: FAIL: 6 target(s), 0 error(s), 2 warning(s), 0 note(s), 4 ignored"
    parsed = [COMMAND.match(line) for line in commands]
    assert all(parsed), commands
    props = [dict(p.split("=", 1) for p in m.group(2).split(",")) for m in parsed if m]
    assert [(p["file"].endswith("compose.yml"), p["line"]) for p in props] == [(True, "14"), (False, "40")]
    assert props[0]["title"].startswith("shmdoctor default-shm%3A ")
    assert {m.group(1) for m in parsed if m} == {"warning"}


def test_a_file_name_with_commas_colons_and_a_newline_stays_one_command(tmp_path):
    folder = tmp_path / "a,b:c\nd"
    folder.mkdir()
    (folder / "compose.yml").write_text((DATA / "suppress" / "compose.yml").read_text())
    proc = forked_cli("lint", str(folder / "compose.yml"), "--format", "github")
    *commands, _ = proc.stdout.splitlines()
    assert len(commands) == 1  # the plain service's warning: one line whatever the name holds
    match = COMMAND.match(commands[0])
    assert match, commands[0]
    assert f"file={escape_property(str(folder / 'compose.yml'))}," in commands[0]
    assert "a%2Cb%3Ac%0Ad" in match.group(2)
