"""The README stays true: its rules table is the catalogue, its command lines parse, its lint output is real."""

import re
import shlex

import pytest

from shmdoctor.rules import catalogue
from tests.helpers import REPO, forked_cli, readme_blocks

README = (REPO / "README.md").read_text()
BLOCKS = readme_blocks()


def command_lines() -> list[str]:
    lines = []
    for block in BLOCKS:
        for line in block.splitlines():
            line = re.sub(r"^\$ ", "", line.strip())
            m = re.search(r"(?:^|\| |&& |\S+=\S+ )shmdoctor ([a-z]+(?: .*)?)$", line)
            if m and not line.startswith("#"):
                text = m.group(1).split(" #")[0].split(" >")[0].split(" |")[0].replace("...", "")
                lines.append(text.strip())
    return lines


def test_the_rules_table_is_the_catalogue():
    rows = re.findall(r'^\| <a id="rule-([a-z-]+)"></a>`([a-z-]+)` \| (?:error|warning|info) \|', README, re.M)
    assert all(anchor == rule for anchor, rule in rows), "each row's anchor (SARIF's helpUri) names its rule"
    assert {rule for _, rule in rows} == {r.id for r in catalogue()}


@pytest.mark.parametrize("line", command_lines())
def test_every_documented_command_line_parses(line):
    """Each `shmdoctor ...` line of the README, its options checked by the real parser (--help: nothing runs)."""
    args = shlex.split(line)
    cut = args.index("--") if "--" in args else len(args)  # run: what follows -- is the command, not ours
    proc = forked_cli(*args[:cut], "--help", *args[cut:])
    assert proc.returncode == 0, f"{line}: {proc.stderr}"


def test_there_are_command_lines_for_every_command():
    documented = {line.split()[0] for line in command_lines()}
    assert {"check", "audit", "lint", "bench", "watch", "clean", "explain", "run"} <= documented


LINT_OF_FILES = [b for b in BLOCKS if re.match(r"\$ shmdoctor lint (?:tests/data|examples)/\S+", b)]


@pytest.mark.parametrize("block", LINT_OF_FILES, ids=[b.splitlines()[0][2:70] for b in LINT_OF_FILES])
def test_every_lint_example_of_a_file_in_the_repository_is_what_lint_prints(block):
    """Each `$ shmdoctor lint <a file of this repository>` example: its lines up to the first '...' (or a next '$'
    command) are the first lines lint prints; after a '...', each line it shows is printed somewhere after."""
    command, *shown = block.strip().splitlines()
    if any(line.startswith("$ ") for line in shown):  # several commands in one block: the first one's lines
        shown = shown[: next(i for i, line in enumerate(shown) if line.startswith("$ "))]
    proc = forked_cli(*shlex.split(command)[2:])
    assert proc.returncode in (0, 1), proc.stderr
    printed = proc.stdout.splitlines()
    head = shown[: shown.index("...")] if "..." in shown else shown
    assert printed[: len(head)] == head
    rest = printed[len(head) :]
    for line in shown[len(head) + 1 :]:
        if line != "...":
            assert line in rest, line
            rest = rest[rest.index(line) + 1 :]
