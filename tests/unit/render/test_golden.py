"""The text outputs README.md and the manual (docs/) show, rendered from the same documents and compared with
tests/golden/*.txt: check's failing container (README.md, docs/commands/check.md), lint of the examples
(docs/commands/lint.md), clean in a container (docs/commands/clean.md), watch beside a loader (docs/commands/watch.md).

A renderer's change shows here as a diff. When it is meant: `UPDATE_GOLDEN=1 pytest tests/unit/render/test_golden.py`
rewrites the files (and skips the comparison: a file is not checked against itself; refused under CI=true); review
them with `git diff tests/golden`, then bring the pages' blocks to the same text (the test here says where they
differ). Each test also asserts its key numbers, worked out here, so that a golden rewritten wrong still fails.
"""

from __future__ import annotations

import os

import pytest

from shmdoctor.fleet import judge_labelled
from shmdoctor.loader import loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.probe import files
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.render import render
from shmdoctor.reports import Lint
from shmdoctor.rules import judge
from shmdoctor.shm.removal import Cleaned
from shmdoctor.shm.sampling import Sampler
from shmdoctor.shm.segments import File, plan_removal
from shmdoctor.sizes import GiB, KiB, MiB
from shmdoctor.workload import Workload
from tests.helpers import CI, REPO, doc_block

GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


@pytest.fixture(autouse=True)
def no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")


def golden(name: str, text: str) -> list[str]:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        if CI:
            pytest.fail("UPDATE_GOLDEN=1 under CI=true: a golden is reviewed and committed, not rewritten by the run")
        path.write_text(text + "\n")
        pytest.skip(f"{path} rewritten: review it with git diff")
    assert text + "\n" == path.read_text(), f"{path} differs (UPDATE_GOLDEN=1 rewrites it)"
    return text.splitlines()


def page_block(first: str) -> list[str]:
    """The block of README.md or docs/ whose first line starts with `first`, as lines."""
    return doc_block(first).rstrip("\n").splitlines()


def same_lines(shown: list[str], rendered: list[str]) -> None:
    """The page's lines are the first rendered ones; a line of '...' elides the rest, one ending in '...)' the
    rest of its line."""
    for n, line in enumerate(shown):
        if line.strip() == "...":
            return
        if line.endswith("...)"):
            assert rendered[n].startswith(line[:-4]), (n, line)
            continue
        assert rendered[n] == line, f"the page's line {n}: {line!r} is rendered as {rendered[n]!r}"


def test_check_in_a_default_container():
    facts = Facts(
        target=Target("local", "3b4f6bc51946"),
        shm=Shm(True, 64 * MiB, 0, 64 * MiB, "docker-shm", "shm on /dev/shm type tmpfs (rw,size=65536k)"),
        ipc=Ipc("private"),
        memory=Memory(None, int(10.1 * MiB)),
        runtime="docker",
        nofile=20000,
        cpus=2.0,
    )
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    text = render(judge(facts, need), "text")
    same_lines(page_block("FAIL  this loader needs 900 MiB"), golden("check-fail", text))
    need_mib = (2 * 4 + 1) * 100  # (prefetch·workers + 1) batches of 100 × 1 MiB
    assert text.startswith(f"FAIL  this loader needs {need_mib} MiB of /dev/shm; 64 MiB is free")
    assert "--shm-size=1536m" in text and need_mib * 1.25 <= 1536  # +25%, rounded up to 1.5 GiB
    fits = max(b for b in range(1, 101) if (2 * 4 + 1) * b <= 64 * 0.8)  # batches of b MiB in 80% of 64 MiB
    assert f"DataLoader(batch_size={fits}, ...)" in text and fits == 5


def test_lint_of_the_examples():
    inputs = files.read(["examples/docker-compose.yml", "examples/k8s-job.yaml"], None)
    reports = tuple(judge_labelled(d.facts, Workload(), d.loader_spec, "error") for d in inputs.definitions)
    text = render(Lint(reports, sources=tuple(inputs.sources)), "text")
    same_lines(page_block("$ shmdoctor lint examples/")[1:], golden("lint-examples", text))
    rows = [line.split() for line in text.splitlines() if line.startswith("OK ")]
    assert [r[2:6] for r in rows] == [["1.5", "GiB", "private", "900"]] * 2  # the examples give 1.5 GiB for 900 MiB


def _cleaned(exclusive: bool) -> Cleaned:
    """clean --yes in a container: a dead NCCL segment, a PyTorch one whose creator (pid 60) is not alive here, a
    file it does not know."""
    files = [File("nccl-Ab12Cd", 1, 8 * KiB), File("torch_60_1_0", 2, 8 * KiB), File("notes.txt", 3, 4 * KiB)]
    alive = Holders((), pids=frozenset({1, 7}))
    plan = plan_removal(files, alive, creators_visible=exclusive)
    return Cleaned("/dev/shm", 64 * MiB, 20 * KiB, plan, yes=True, exclusive=exclusive, removed=plan.leaked)


@pytest.mark.parametrize("exclusive", [False, True])
def test_clean_in_a_container(exclusive):
    name = "clean-exclusive" if exclusive else "clean"
    command = "$ shmdoctor clean --yes --exclusive" if exclusive else "$ shmdoctor clean --yes  "
    text = render(_cleaned(exclusive), "text")
    same_lines(page_block(command)[1:], golden(name, text))
    removed = 2 if exclusive else 1  # the dead NCCL segment; with --exclusive the PyTorch one too, 8 KiB each
    assert f"Freed {removed * 8} KiB: removed {removed} of {removed} leaked segment" in text


def test_watch_beside_a_loader():
    sampler = Sampler("/dev/shm", holders_every=2.0, budget=10 * MiB)
    size = int(23.5 * GiB)

    def holder(pid: int, bytes_: int, n: int) -> Holder:
        each = bytes_ // n
        segments = tuple(Segment(pid * 100 + i, f"torch_{pid}_{1000 + i}_{i}", each, True) for i in range(n))
        return Holder(pid, "python tests/loaders/running.py", segments)

    held = Holders(
        (holder(1729, int(4.1 * MiB), 16), holder(1728, 4 * MiB, 13), holder(1721, int(2.1 * MiB), 15)),
        pids=frozenset({1721, 1728, 1729}),
    )
    used = {0.0: 0, 0.5: 0, 1.0: int(8.1 * MiB), 1.5: int(10.1 * MiB), 2.0: int(10.1 * MiB)}
    lines = [render(sampler.start(0.5), "text")]
    for t in [n / 2 for n in range(13)]:
        sample = sampler.record(t, size, used.get(t, int(10.1 * MiB)), held if t == 2.0 else None)
        lines.append(render(sample, "text"))
    lines.append(render(sampler.summary(6.0), "text"))
    text = "\n".join(line for line in lines if line)
    shown = page_block("$ shmdoctor watch --duration 6")[1:]
    same_lines(shown, golden("watch", text))
    assert "Summary  13 samples over 6.0 s" in text  # t = 0, 0.5, ... 6
    assert "peak     10.1 MiB at 1.5s" in text and "took 101% of it" in text  # 10.1 MiB of a 10 MiB budget
    assert "holders  3 processes seen in 1 scans" in text
    assert "dataloader 10.2 MiB" in text  # 4.1 + 4 + 2.1 MiB held at once


def test_the_same_documents_as_json_are_valid():
    """Each document above, rendered as JSON, against its schema (watch: each sample line and the summary)."""
    import json

    from tests.helpers import validate

    for cleaned in (_cleaned(False), _cleaned(True)):
        validate(json.loads(render(cleaned, "json")))
    sampler = Sampler("/dev/shm", holders_every=2.0, budget=10 * MiB)
    held = Holders((Holder(7, "python train.py", (Segment(1, "torch_1", 4096, True),)),))
    assert render(sampler.start(0.5), "json") == ""  # JSON lines have no header
    for t, fresh in ((0.0, None), (0.5, held)):
        assert validate(json.loads(render(sampler.record(t, GiB, 4096, fresh), "json")))["type"] == "sample"
    assert validate(json.loads(render(sampler.summary(1.0, 2), "json")))["interrupted"] is True
