"""The config file (issue 37 item 3): [tool.shmdoctor] in a pyproject.toml or a .shmdoctor.toml, the closest above
each linted file, or --config's; precedence label > command line > per-path glob > the config's keys; --show-config;
a hostile config is one line, exit 2. Real files in a temporary repository, the real CLI run from elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, doc_block, forked_cli

MiB = 2**20
# A trainer (a PyTorch image: the loader applies to it) with 2 GiB of /dev/shm, and a labelled one beside it.
COMPOSE = """\
services:
  trainer:
    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
    shm_size: 2g
  labelled:
    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
    shm_size: 2g
    labels: {shmdoctor.loader: "batch_size=16"}
"""
PYPROJECT = doc_block('[project]\nname = "a-training-repository"')  # docs/config.md's example


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """repo/pyproject.toml, two folders above repo/deploy/k8s/{compose,big-compose}.yml; lint is run from outside."""
    (tmp_path / "repo" / "deploy" / "k8s").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "repo" / "pyproject.toml").write_text(PYPROJECT)
    for name in ("compose.yml", "big-compose.yml"):
        (tmp_path / "repo" / "deploy" / "k8s" / name).write_text(COMPOSE)
    return tmp_path / "repo"


def lint(repo: Path, *args: str, file: str = "deploy/k8s/compose.yml") -> tuple[int, dict[str, dict]]:
    proc = forked_cli("lint", str(repo / file), *args, "--format", "json", cwd=repo.parent / "elsewhere")
    assert proc.returncode in (0, 1), proc.stderr
    reports = {r["target"]["name"].rsplit(":", 1)[-1]: r for r in json.loads(proc.stdout)["reports"]}
    return proc.returncode, reports


def batch_size(report: dict) -> int | None:
    loader = (report["requirement"] or {}).get("loader")
    return loader["batch_size"] if loader else None


def test_a_pyproject_two_folders_up_gives_lint_its_loader(repo):
    """The loader of repo/pyproject.toml reaches a file of repo/deploy/k8s/, lint run from another folder: 4 workers
    with 2 batches ahead each and the one the loop holds, 9 batches of 64 x 1 MiB, are 576 MiB."""
    _, reports = lint(repo)
    need = reports["trainer"]["requirement"]
    assert need["loader"] == {**need["loader"], "batch_size": 64, "num_workers": 4, "sample_bytes": MiB}
    assert need["bytes"] == 576 * MiB
    (repo / "pyproject.toml").write_text('[project]\nname = "no-config"\n')  # another tool's pyproject: passed by
    _, reports = lint(repo)
    assert reports["trainer"]["requirement"] is None


def test_a_per_path_glob_is_over_the_config_for_the_files_it_matches(repo):
    """big-*.yml gets batch-size 128 from its glob (9 x 128 MiB = 1.1 GiB), its other keys from the config's own;
    compose.yml, not matched, keeps 64."""
    _, big = lint(repo, file="deploy/k8s/big-compose.yml")
    assert batch_size(big["trainer"]) == 128 and big["trainer"]["requirement"]["bytes"] == 9 * 128 * MiB
    _, plain = lint(repo)
    assert batch_size(plain["trainer"]) == 64


@pytest.mark.parametrize(
    ("args", "file", "trainer", "labelled"),
    [
        ((), "deploy/k8s/compose.yml", 64, 16),  # the config's keys; the label over them
        ((), "deploy/k8s/big-compose.yml", 128, 16),  # a glob over the config's keys
        (("--batch-size", "32"), "deploy/k8s/big-compose.yml", 32, 16),  # the command line over the glob
        (("--workload", "labelled"), "deploy/k8s/compose.yml", None, 16),  # --workload: the config's loader too
    ],
)
def test_precedence_label_then_command_line_then_glob_then_config(repo, args, file, trainer, labelled):
    _, reports = lint(repo, *args, file=file)
    assert (batch_size(reports["trainer"]), batch_size(reports["labelled"])) == (trainer, labelled)


def test_fail_on_and_the_rules_from_the_config_under_the_command_line(repo):
    """The config's fail-on makes a warning fail; --fail-on error on the command line is over it. Its ignore marks
    the rule's finding suppressed, saying which file; --ignore adds to it; --select resets the config's rules."""
    (repo / "pyproject.toml").write_text(PYPROJECT.replace("batch-size = 64", 'fail-on = "warning"\nbatch-size = 64'))
    (repo / "deploy" / "k8s" / "compose.yml").write_text(COMPOSE.replace("shm_size: 2g", "shm_size: 640m", 1))
    code, reports = lint(repo)  # 576 MiB of 640: thin-headroom, a warning
    ids = [f["id"] for f in reports["trainer"]["findings"]]
    assert code == 1 and "thin-headroom" in ids and reports["trainer"]["verdict"] == "fail"
    code, _ = lint(repo, "--fail-on", "error")
    assert code == 0
    config = repo / "pyproject.toml"
    config.write_text(config.read_text().replace("batch-size = 64", 'batch-size = 64\nignore = ["thin-headroom"]'))
    code, reports = lint(repo)
    (finding,) = [f for f in reports["trainer"]["findings"] if f["id"] == "thin-headroom"]
    assert code == 0 and finding["suppressed"] == {"by": f"ignore in {config} [tool.shmdoctor]", "kind": "external"}
    code, reports = lint(repo, "--select", "thin-headroom,shm-too-small")
    assert code == 1 and [f["suppressed"] for f in reports["trainer"]["findings"] if f["id"] == "thin-headroom"] == [
        None
    ]


def test_the_closest_config_wins_and_shmdoctor_toml_before_pyproject(repo):
    """A .shmdoctor.toml (keys at its top) in deploy/ is closer than repo/pyproject.toml: its loader alone applies
    (the pyproject's keys are not merged in); --config names another file for every file."""
    (repo / "deploy" / ".shmdoctor.toml").write_text("batch-size = 8\nnum-workers = 2\nsample-bytes = 2097152\n")
    _, reports = lint(repo)
    assert reports["trainer"]["requirement"]["loader"]["batch_size"] == 8
    assert reports["trainer"]["requirement"]["bytes"] == (2 * 2 + 1) * 8 * 2 * MiB
    (repo / "deploy" / "pyproject.toml").write_text("[tool.shmdoctor]\nbatch-size = 4\n")  # same folder: second
    _, reports = lint(repo)
    assert batch_size(reports["trainer"]) == 8
    _, reports = lint(repo, "--config", str(repo / "pyproject.toml"))
    assert batch_size(reports["trainer"]) == 64


def test_show_config_says_each_value_and_where_it_came_from(repo):
    proc = forked_cli(
        "lint", str(repo / "deploy/k8s/big-compose.yml"), "--num-workers", "8", "--show-config", cwd=repo.parent
    )
    assert proc.returncode == 0, proc.stderr
    config = f"{repo / 'pyproject.toml'} [tool.shmdoctor]"
    lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
    assert lines[0] == f"{repo / 'deploy/k8s/big-compose.yml'}: config: {config}"
    for line in (
        f"batch-size = 128 per-path 'deploy/k8s/big-*.yml' of {config}",
        "num-workers = 8 the command line",
        f'sample-bytes = "1MiB" {config}',
        "prefetch-factor: not set",
        "pin-memory = false default",
        'fail-on = "error" default',
    ):
        assert line in lines, (line, lines)


def test_check_audit_and_the_exporter_read_the_working_directorys_config(repo):
    """check judges this machine with the config above its working directory; audit's and the exporter's settings
    (shown: no engine is reached) come from it too."""
    proc = forked_cli("check", "--format", "json", cwd=repo / "deploy")
    assert proc.returncode in (0, 1) and json.loads(proc.stdout)["requirement"]["loader"]["batch_size"] == 64
    for command in ("audit", "exporter"):
        proc = forked_cli(command, "--show-config", cwd=repo / "deploy")
        lines = [" ".join(line.split()) for line in proc.stdout.splitlines()]
        assert proc.returncode == 0 and f"batch-size = 64 {repo / 'pyproject.toml'} [tool.shmdoctor]" in lines


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[tool.shmdoctor\nbatch-size = 1\n", "not TOML"),
        ("[tool.shmdoctor]\nbatch-sise = 1\n", "'batch-sise': not a key it takes"),
        ('[tool.shmdoctor]\nbatch-size = "64"\n', "batch-size: expected an integer, got '64'"),
        ("[tool.shmdoctor]\npin-memory = 1\n", "pin-memory: expected true or false"),
        ('[tool.shmdoctor]\nnccl = "fast"\n', "nccl: expected 'auto' or 'shm' or 'p2p' or 'off'"),
        ('[tool.shmdoctor]\nignore = ["no-such-rule"]\n', "no rule 'no-such-rule'"),
        ('[tool.shmdoctor]\nignore = "default-shm"\n', "ignore: expected a list of rule IDs"),
        ('[tool.shmdoctor.per-path]\n"*.yml" = 64\n', "a table of options"),
        ('[tool.shmdoctor.per-path]\n"*.yml" = { fail-on = "warning" }\n', "'fail-on': not a key it takes"),
        ("[tool.shmdoctor]\nbatch-size = 0\nnum-workers = 1\nsample-bytes = 1\n", "[tool.shmdoctor]: batch_size"),
        ("[tool.shmdoctor]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n", "pyproject.toml: not TOML"),
        ("[tool.shmdoctor]\n# shmdoctor" + " " * 2**20 + "\n", "a config of more than 1 MiB"),
        ("[tool.shmdoctor]\nbatch-size = 1 # \xff\n", "not UTF-8"),
    ],
    ids=lambda v: v[:30] if isinstance(v, str) else None,
)
def test_a_hostile_config_is_one_line_and_exit_2(repo, text, words):
    (repo / "pyproject.toml").write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    proc = forked_cli("lint", str(repo / "deploy/k8s/compose.yml"), cwd=repo.parent)
    assert_one_line_error(proc, 2, words)
    assert str(repo / "pyproject.toml") in proc.stderr


def test_config_that_names_no_config_is_one_line_and_exit_2(repo):
    for path, words in (
        (repo / "missing.toml", "cannot read the config"),
        (repo / "deploy" / "k8s" / "compose.yml", "not TOML"),
    ):
        assert_one_line_error(forked_cli("check", "--config", str(path)), 2, words)
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert_one_line_error(forked_cli("check", "--config", str(repo / "pyproject.toml")), 2, "no [tool.shmdoctor]")
