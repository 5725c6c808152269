"""A newcomer's first minute with the real CLI: bare `shmdoctor` is the help (exit 0), -V the version, --color and
NO_COLOR, the bench extra's CPU wheel, and lint's table within a 120-column terminal."""

from __future__ import annotations

import re
import sys

import pytest
import tomllib

from shmdoctor.cli import COMMANDS
from tests.helpers import DATA, REPO, forked_cli

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_bare_shmdoctor_prints_the_help_and_exits_0():
    proc = forked_cli()
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("Usage: shmdoctor [OPTIONS] COMMAND") or proc.stdout.startswith(
        "Usage: shmdoctor [OPTIONS] [COMMAND]"
    )
    listed = re.findall(r"(?m)^  ([a-z]+)  ", proc.stdout.split("Commands:")[1])
    assert listed == list(COMMANDS)
    assert proc.stdout == forked_cli("--help").stdout


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_the_version(flag):
    proc = forked_cli(flag)
    assert proc.returncode == 0
    assert proc.stdout == f"shmdoctor, version {PROJECT['version']}\n"


def test_the_bench_extra_says_the_cpu_wheel_where_torch_is_missing(monkeypatch):
    """torch made unfindable in the forked CLI, as where the extra was never installed."""
    monkeypatch.setitem(sys.modules, "torch", None)
    proc = forked_cli("bench", "--sample-bytes", "1MiB", "--batch-size", "4")
    assert proc.returncode == 2
    assert "pip install 'shmdoctor[bench]'" in proc.stderr
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in proc.stderr
    install = (REPO / "docs" / "install.md").read_text()
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in install


@pytest.mark.parametrize(
    "args, env, coloured",
    [
        (["check"], {}, False),  # not a terminal: Click takes the codes off
        (["--color", "always", "check"], {}, True),
        (["check", "--color", "always"], {}, True),  # after the command too
        (["--color", "always", "check"], {"NO_COLOR": "1"}, True),  # the flag over the variable
        (["check"], {"NO_COLOR": "1"}, False),
        (["--color", "never", "check"], {}, False),
        (["--color", "always", "lint", str(DATA / "manifests" / "docker-compose.yml"), *SEED], {}, True),
    ],
)
def test_color(args, env, coloured):
    proc = forked_cli(*args, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert bool(ANSI.search(proc.stdout)) == coloured


def test_an_unknown_color_is_a_usage_error():
    proc = forked_cli("--color", "sometimes", "check")
    assert proc.returncode == 2 and "'sometimes' is not one of 'auto', 'always', 'never'" in proc.stderr


def words(text: str) -> list[str]:
    """The words of a text, wherever lines are cut (at spaces, '/' and ':')."""
    return re.findall(r"[^\s/:]+", text)


@pytest.mark.parametrize("columns", [120, 100])
def test_lints_table_fits_the_terminal_without_cutting_a_word(columns):
    whole = forked_cli("lint", "tests/data/manifests", *SEED, env={"COLUMNS": ""})
    fitted = forked_cli("lint", "tests/data/manifests", *SEED, env={"COLUMNS": str(columns)})
    assert whole.returncode == fitted.returncode == 1
    assert max(len(line) for line in whole.stdout.splitlines()) > 150  # the file's table is wide
    longest = [line for line in fitted.stdout.splitlines() if len(line) > columns]
    assert not longest, longest
    # every word whole (a table's cells wrap beside each other: the same words, not in the same order)
    assert sorted(words(fitted.stdout)) == sorted(words(whole.stdout))
