"""The README stays true: its rules table is the catalogue, its command lines parse, its lint output is real."""

import re
import shlex

import pytest
from conftest import REPO, run_cli

from shmdoctor.rules import RULES

README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```(?:bash|console)?\n(.*?)```", README, re.S)


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
    table = set(re.findall(r"^\| `([a-z-]+)` \| (?:error|warning|info) \|", README, re.M))
    assert table == {r.id for r in RULES}


@pytest.mark.parametrize("line", command_lines())
def test_every_documented_command_line_parses(line):
    """Each `shmdoctor ...` line of the README, its options checked by the real parser (--help: nothing runs)."""
    proc = run_cli(*shlex.split(line), "--help")
    assert proc.returncode == 0, f"{line}: {proc.stderr}"


def test_there_are_command_lines_for_every_command():
    documented = {line.split()[0] for line in command_lines()}
    assert {"check", "audit", "lint", "bench", "watch", "clean"} <= documented


def test_the_lint_example_output_is_what_lint_prints():
    block = next(b for b in BLOCKS if b.startswith("$ shmdoctor lint examples/"))
    command, *expected = block.strip().splitlines()
    proc = run_cli(*shlex.split(command)[2:])
    assert proc.returncode == 0 and proc.stdout.splitlines()[: len(expected)] == expected


def test_the_failing_container_output_is_what_check_prints(images):
    """The README's 'A container that fails': the same command in a default container, line for line (the
    container's hostname, its memory in use, ulimit and CPUs aside)."""
    from conftest import docker_run

    block = next(b for b in BLOCKS if b.startswith("FAIL  this loader needs 900 MiB"))
    proc = docker_run(
        cmd=[
            "python",
            "-m",
            "shmdoctor",
            "check",
            "--batch-size",
            "100",
            "--num-workers",
            "4",
            "--sample-bytes",
            "1MiB",
        ]
    )

    def normal(text: str) -> list[str]:
        text = re.sub(r"Facts   \w+ ", "Facts   HOST ", text)
        text = re.sub(r"ulimit -n  \d+    CPUs [\d.]+", "ulimit -n  N    CPUs N", text)
        return re.sub(r"no limit, [\d.]+ \w+ used", "no limit, USED", text).rstrip().splitlines()

    assert proc.returncode == 1 and normal(proc.stdout) == normal(block)
