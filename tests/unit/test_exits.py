"""Exit codes live in one enum, and the README's table documents each of them."""

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
        "COMMAND_NOT_EXECUTABLE": 126,
        "COMMAND_NOT_FOUND": 127,
        "INTERRUPTED": 130,
        "TERMINATED": 143,
    }


def test_the_readme_table_lists_every_code():
    table = {int(n) for n in re.findall(r"^\| (\d+) \| ", (REPO / "README.md").read_text(), re.M)}
    assert table == {int(e) for e in ExitCode}
