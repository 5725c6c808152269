"""The pre-commit hook (.pre-commit-hooks.yaml) as a user runs it: real pre-commit installs shmdoctor from a clone of
this tree (`language: python`: pip, from the package index) into its own environment, in a temporary git repository
whose config is docs/ci.md's, naming the hook with a loader as args. A compose file with an ML service on the 64 MiB
default blocks the commit with the finding; the fixed file passes, through `pre-commit run --all-files` and through
`git commit`."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO, ci_tool, doc_blocks
from tests.integration.ci.tree import GIT_ENV, git

BAD = """\
services:
  trainer:
    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
    command: ["torchrun", "--nproc-per-node=1", "train.py"]
"""
# 900 MiB needed ((2·4 + 1) batches of 100 × 1 MiB); the fix the finding gives is 1.5 GiB
FIXED = BAD + '    shm_size: "1536m"\n'
INSTALL = 600  # seconds: pre-commit builds its environment once (pip, from the index), then reuses it


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path, tree) -> Path:
    """A git repository whose config is docs/ci.md's, its repo and rev this tree's clone."""
    repo, rev = tree
    assert git("init", "-q", cwd=tmp_path).returncode == 0
    (documented,) = [
        b.body for b in doc_blocks("docs/ci.md") if b.language == "yaml" and "id: shmdoctor-lint" in b.body
    ]
    config = re.sub(r"(?m)^(  - repo: ).*\n(    rev: ).*$", rf"\g<1>{repo}\n\g<2>{rev}", documented)
    assert config != documented and 'args: [--batch-size, "100", --num-workers, "4"' in config
    (tmp_path / ".pre-commit-config.yaml").write_text(config)
    return tmp_path


def hooked(argv: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    """A command that runs the hook (pre-commit itself, or git commit through the installed hook), with the
    shmdoctor pre-commit installed, not this tree's import path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GIT_ENV, PRE_COMMIT_HOME=str(home), NO_COLOR="1")
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=INSTALL, env=env)


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    tool = ci_tool("pre-commit")
    assert tool
    return hooked([tool, *args], cwd, home)


def test_run_all_files_blocks_the_64_mib_default_and_passes_the_fix(project, pre_commit_home):
    (project / "docker-compose.yml").write_text(BAD)
    assert git("add", "-A", cwd=project).returncode == 0
    blocked = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert re.search(r"shmdoctor lint\.+Failed", blocked.stdout), blocked.stdout
    assert "docker-compose.yml:trainer: error shm-too-small: this loader needs 900 MiB of /dev/shm" in blocked.stdout
    assert 'shm_size: "1536m"' in blocked.stdout  # the fix, in compose's own words

    (project / "docker-compose.yml").write_text(FIXED)
    assert git("add", "-A", cwd=project).returncode == 0
    passed = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert re.search(r"shmdoctor lint\.+Passed", passed.stdout), passed.stdout


def test_the_fix_hook_writes_the_fix_stops_once_and_then_passes(project, pre_commit_home):
    """shmdoctor-lint-fix, as ruff's --fix hook: the first run writes the fix and fails (a file changed, to review
    and stage), the second passes with the file as it was written."""
    config = project / ".pre-commit-config.yaml"
    config.write_text(config.read_text().replace("id: shmdoctor-lint\n", "id: shmdoctor-lint-fix\n"))
    (project / "docker-compose.yml").write_text(BAD)
    assert git("add", "-A", cwd=project).returncode == 0
    fixed = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert fixed.returncode == 1 and re.search(r"shmdoctor lint --fix\.+Failed", fixed.stdout), fixed.stdout
    assert (project / "docker-compose.yml").read_text() == BAD + "    shm_size: 1536m\n"
    assert git("add", "-A", cwd=project).returncode == 0
    again = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert again.returncode == 0 and re.search(r"shmdoctor lint --fix\.+Passed", again.stdout), again.stdout


def test_the_git_commit_itself_is_blocked_then_made(project, pre_commit_home):
    assert pre_commit("install", cwd=project, home=pre_commit_home).returncode == 0
    (project / "compose.yaml").write_text(BAD)
    (project / "README.md").write_text("not a workload: no hook runs on it\n")
    git("add", "-A", cwd=project)
    commit = hooked(["git", "commit", "-m", "trainer"], project, pre_commit_home)
    assert commit.returncode == 1, commit.stdout + commit.stderr
    assert "compose.yaml:trainer: error shm-too-small" in commit.stdout + commit.stderr
    assert git("rev-parse", "--verify", "-q", "HEAD", cwd=project).returncode != 0  # nothing was committed

    (project / "compose.yaml").write_text(FIXED)
    git("add", "-A", cwd=project)
    commit = hooked(["git", "commit", "-m", "trainer, sized"], project, pre_commit_home)
    assert commit.returncode == 0, commit.stdout + commit.stderr
    assert git("log", "--format=%s", cwd=project).stdout.split("\n")[0] == "trainer, sized"


def test_without_args_the_hook_still_blocks_a_trainer_on_the_default(project, pre_commit_home):
    """docs/ci.md's config with its `args` line removed, as most repositories adopt a hook: no loader is known, the
    trainer on the engine's 64 MiB default is default-shm (a warning), and the hook's own --fail-on warning stops the
    commit with it; the sized file passes."""
    config = project / ".pre-commit-config.yaml"
    lines = config.read_text().splitlines(keepends=True)
    config.write_text("".join(line for line in lines if not line.lstrip().startswith("args:")))
    assert "args:" not in config.read_text() and "id: shmdoctor-lint\n" in config.read_text()
    (project / "docker-compose.yml").write_text(BAD)
    assert git("add", "-A", cwd=project).returncode == 0
    blocked = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert re.search(r"shmdoctor lint\.+Failed", blocked.stdout), blocked.stdout
    assert "docker-compose.yml:trainer: warning default-shm: /dev/shm is the default 64 MiB" in blocked.stdout

    (project / "docker-compose.yml").write_text(FIXED)
    assert git("add", "-A", cwd=project).returncode == 0
    passed = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_a_pyproject_gives_the_hook_its_loader(project, pre_commit_home):
    """docs/ci.md's config without `args`, the loader in the repository's pyproject.toml instead ([tool.shmdoctor],
    docs/config.md): a compose file two folders down is judged with it (900 MiB needed: shm-too-small, an error),
    the sized file passes."""
    config = project / ".pre-commit-config.yaml"
    lines = config.read_text().splitlines(keepends=True)
    config.write_text("".join(line for line in lines if not line.lstrip().startswith("args:")))
    (project / "pyproject.toml").write_text(
        '[tool.shmdoctor]\nbatch-size = 100\nnum-workers = 4\nsample-bytes = "1MiB"\n'
    )
    (project / "deploy" / "compose").mkdir(parents=True)
    compose = project / "deploy" / "compose" / "docker-compose.yml"
    compose.write_text(BAD)
    assert git("add", "-A", cwd=project).returncode == 0
    blocked = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "docker-compose.yml:trainer: error shm-too-small: this loader needs 900 MiB of /dev/shm" in blocked.stdout

    compose.write_text(FIXED)
    assert git("add", "-A", cwd=project).returncode == 0
    passed = pre_commit("run", "--all-files", cwd=project, home=pre_commit_home)
    assert passed.returncode == 0, passed.stdout + passed.stderr


@pytest.mark.parametrize(
    "path, judged",
    [
        ("docker-compose.yml", True),
        ("services/compose.prod.yaml", True),
        ("deploy/quadlet/trainer.container", True),
        ("k8s/job.yaml", True),
        ("deploy/manifests/pod.json", True),
        ("ecs/train-task-definition.json", True),
        ("batch/resnet-job-definition.json", True),
        ("azureml/train-job.yml", True),
        ("k8s/kustomization.yaml", False),
        ("charts/trainer/values.yaml", False),
        ("deploy/chart/templates/job.yaml", False),
        (".github/workflows/ci.yml", False),
        ("package.json", False),
        ("mkdocs.yml", False),
    ],
)
def test_the_hooks_file_patterns(path, judged):
    """The patterns as pre-commit reads them (its own loader and matcher), on the names where workloads live."""
    from pre_commit.clientlib import load_manifest

    lint, fix = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    matched = re.search(lint["files"], path) is not None and re.search(lint["exclude"], path) is None
    assert matched == judged
    assert (fix["id"], fix["files"], fix["exclude"]) == ("shmdoctor-lint-fix", lint["files"], lint["exclude"])
