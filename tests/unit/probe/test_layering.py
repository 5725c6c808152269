"""Probe -> judge -> render, one way: no probe imports what judges or renders (rules, fixes, capacity, the output
layer, the commands). Read from the source, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import shmdoctor.probe

PROBES = sorted(Path(shmdoctor.probe.__file__).parent.glob("*.py"))
JUDGE_AND_RENDER = ("rules", "fixes", "capacity", "fleet", "render", "commands", "diagnose.judge", "cli")


def imported(source: str) -> set[str]:
    """The shmdoctor names a module of shmdoctor/probe/ imports, dotted under shmdoctor (relative ones resolved)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:  # level 1: shmdoctor.probe, level 2: shmdoctor
            base = ".".join(["probe"][: 2 - node.level] + ([node.module] if node.module else []))
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("shmdoctor."):
            names.update(f"{node.module[len('shmdoctor.') :]}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name[len("shmdoctor.") :] for a in node.names if a.name.startswith("shmdoctor."))
    return names


def judging(names: set[str]) -> set[str]:
    return {n for n in names if any(n == m or n.startswith(m + ".") for m in JUDGE_AND_RENDER)}


@pytest.mark.parametrize("path", PROBES, ids=[p.stem for p in PROBES])
def test_a_probe_imports_nothing_that_judges_or_renders(path):
    assert not judging(imported(path.read_text())), path.name


@pytest.mark.parametrize(
    "source",
    ["from ..rules import judge", "from .. import rules", "import shmdoctor.rules", "from ..render.text import x"],
)
def test_each_way_of_importing_what_judges_is_seen(source):
    assert judging(imported(source))


def test_a_probe_may_import_the_model_and_its_siblings():
    assert not judging(imported("from ..model import Facts\nfrom . import cgroup\nfrom .documents import where"))
