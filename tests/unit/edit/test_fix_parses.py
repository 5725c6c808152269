"""lint --fix parses each text once (issue 38: --fix at most 3x plain lint): the file as lint read it, whose parse
the fix edits a copy of, and the text it writes, whose check is the parse lint judges again; a text changed between
is parsed anew, and every reader gets a copy of its own."""

from __future__ import annotations

import gc

import pytest

from shmdoctor.cli import main
from shmdoctor.probe import documents

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
PODS = "".join(
    f"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}  # the pod\nspec:\n  containers:\n  - name: c\n"
    "    image: pytorch/pytorch\n    resources:\n      limits:\n        memory: 4Gi\n"
    for i in range(3)
)
COMPOSE = "services:\n  train:\n    image: pytorch/pytorch\n    shm_size: '64m'   # too small\n"


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The YAML texts documents.parse really parsed (each is checked once before it is loaded; a copy of a kept
    parse is not)."""
    texts: list[str] = []
    real = documents._check_yaml

    def counted(yaml, loader, text: str, source: str) -> None:
        texts.append(text)
        real(yaml, loader, text, source)

    monkeypatch.setattr(documents, "_check_yaml", counted)
    return texts


@pytest.mark.parametrize(("name", "text"), [("pods.yaml", PODS), ("compose.yml", COMPOSE)])
def test_fix_parses_the_file_once_and_what_it_writes_once(tmp_path, parsed, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    after = path.read_text()
    assert after != text
    assert parsed == [text, after]  # was four: lint, the fix, its check, lint again
    parsed.clear()
    assert main(["lint", str(path), *LOADER]) == 0  # outside --fix nothing is kept: parsed again, and it passes
    assert parsed == [after]


def test_a_kept_parse_is_a_copy_for_each_reader(parsed):
    with documents.keeping():
        first = documents.parse(COMPOSE, "compose.yml")
        first[0].body["services"]["train"]["shm_size"] = "1g"  # what an editor does to its copy
        again = documents.parse(COMPOSE, "compose.yml")
        other = documents.parse(COMPOSE.replace("64m", "128m"), "compose.yml")
    assert again[0].body["services"]["train"]["shm_size"] == "64m"
    assert again[0].body["services"]["train"].line == 3  # lines kept in the copy
    assert other[0].body["services"]["train"]["shm_size"] == "128m"
    assert len(parsed) == 2  # the first text once, the changed one on its own


def test_fix_runs_with_the_collector_paused_and_gives_it_back(tmp_path, monkeypatch):
    """The cycle collector's full passes over a run's parses grew with the file (10x the services, 11.2-13.6x the
    time): paused while --fix runs, on again after."""
    seen = []
    real = documents._check_yaml
    monkeypatch.setattr(documents, "_check_yaml", lambda *a: seen.append(gc.isenabled()) or real(*a))
    path = tmp_path / "compose.yml"
    path.write_text(COMPOSE)
    assert gc.isenabled()
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert seen == [False, False]
    assert gc.isenabled()
