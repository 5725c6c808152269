"""Exit codes live in one enum, and the manual's table (docs/json.md) documents each of them."""

from __future__ import annotations

import re

from shmdoctor.exits import ExitCode
from tests.helpers import REPO


def test_the_codes_are_the_documented_ones():
    assert {e.name: int(e) for e in ExitCode} == {
        "OK": 0,
        "FINDING": 1,
        "USAGE": 2,
        "PROBE": 3,
        "INTERNAL": 70,
        "COMMAND_NOT_EXECUTABLE": 126,
        "COMMAND_NOT_FOUND": 127,
        "INTERRUPTED": 130,
        "TERMINATED": 143,
    }


def test_the_readme_table_lists_every_code():
    table = {int(n) for n in re.findall(r"^\| (\d+) \| ", (REPO / "docs" / "json.md").read_text(), re.M)}
    assert table == {int(e) for e in ExitCode}


def test_an_internal_error_is_one_line_and_its_own_code_never_1(monkeypatch, capsys):
    from shmdoctor import cli
    from shmdoctor.probe import local

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(local, "probe", broken)
    assert cli.main(["check"]) == ExitCode.INTERNAL == 70
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("shmdoctor: error: internal error (ZeroDivisionError at test_exits.py:")
    assert "a bug in shmdoctor" in err
