"""The composite action (action.yml): actionlint checks the workflow of docs/ci.md against the action's own inputs and
outputs, and each of its `run:` steps runs as the shell it is, the way the runner runs it (`bash --noprofile --norc
-eo pipefail`, inputs through `${{ inputs.* }}`, GITHUB_ACTION_PATH, GITHUB_OUTPUT), in a fresh virtual environment
(actions/setup-python's part): the install step installs this tree there, the lint step judges a workspace."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sarif_pydantic
import yaml

from tests.helpers import REPO, ci_tool
from tests.integration.ci.tree import git

ACTION = yaml.safe_load((REPO / "action.yml").read_text())
CI_PAGE = (REPO / "docs" / "ci.md").read_text()
BAD = """\
services:
  trainer:
    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
    command: ["torchrun", "--nproc-per-node=1", "train.py"]
"""
FIXED = BAD + '    shm_size: "1536m"\n'  # 900 MiB needed for batch 100 x 1 MiB, 4 workers; + 25%: 1.5 GiB
SEED = {"batch-size": "100", "num-workers": "4", "sample-bytes": "1MiB"}
INSTALL = 600  # seconds for pip to install this tree and its dependencies (from the index) in a fresh venv


def documented_workflow() -> str:
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", CI_PAGE, re.S) if "upload-sarif" in b]
    return block


def actionlint(workspace: Path) -> subprocess.CompletedProcess:
    tool, shellcheck = ci_tool("actionlint"), ci_tool("shellcheck")
    assert tool and shellcheck
    argv = [tool, "-no-color", f"-shellcheck={shellcheck}", "-pyflakes="]
    return subprocess.run(argv, cwd=workspace, capture_output=True, text=True, timeout=60)


def linted_workspace(tmp_path: Path, workflow: str) -> Path:
    """docs/ci.md's workflow on the action of this tree (`uses: ./`, whose action.yml actionlint reads), in a git
    repository as actionlint expects."""
    git("init", "-q", cwd=tmp_path)
    shutil.copy(REPO / "action.yml", tmp_path / "action.yml")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "shmdoctor.yml").write_text(workflow)
    return tmp_path


def test_actionlint_passes_the_documented_workflow_on_this_action(tmp_path):
    workflow = documented_workflow()
    assert "uses: shmdoctor/shmdoctor@main" in workflow
    proc = actionlint(linted_workspace(tmp_path, workflow.replace("shmdoctor/shmdoctor@main", "./")))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "change, said",
    [
        (("batch-size: 100", "batch_size: 100"), 'input "batch_size" is not defined in action "shmdoctor lint"'),
        (("outputs.sarif != ''", "outputs.report != ''"), 'property "report" is not defined'),
    ],
)
def test_actionlint_reads_this_actions_inputs_and_outputs(tmp_path, change, said):
    """The pass above is no vacuous one: a misspelt input or output of the action is an error."""
    workflow = documented_workflow().replace("shmdoctor/shmdoctor@main", "./").replace(*change)
    proc = actionlint(linted_workspace(tmp_path, workflow))
    assert proc.returncode == 1 and said in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("name", [s["name"] for s in ACTION["runs"]["steps"] if "run" in s])
def test_shellcheck_passes_each_run_step(name, tmp_path):
    """actionlint checks a workflow's scripts, not a composite action's: shellcheck reads them here."""
    (spec,) = [s for s in ACTION["runs"]["steps"] if s.get("name") == name]
    assert "${{" not in spec["run"]  # inputs reach the script through env only
    (tmp_path / "step.sh").write_text(spec["run"])
    shellcheck = ci_tool("shellcheck")
    assert shellcheck
    proc = subprocess.run([shellcheck, "-s", "bash", "step.sh"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def expand(text: str, inputs: dict[str, str]) -> str:
    """The runner's `${{ inputs.NAME }}`; any other expression in a run step is a test failure (not emulated)."""
    text = re.sub(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}", lambda m: inputs[m.group(1)], text)
    assert "${{" not in text, text
    return text


@pytest.fixture(scope="module")
def venv(tmp_path_factory, tree) -> Path:
    """A fresh venv, with the action's install step run in it on a copy of this tree (GITHUB_ACTION_PATH)."""
    root = tmp_path_factory.mktemp("action-venv")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    (install,) = [s for s in ACTION["runs"]["steps"] if s.get("name") == "Install shmdoctor"]
    proc = step(install, {}, root, root / "venv", action_path=tree[0], timeout=INSTALL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root / "venv"


def step(
    spec: dict, inputs: dict[str, str], workspace: Path, venv: Path, action_path: Path, timeout: int = 120
) -> subprocess.CompletedProcess:
    assert spec["shell"] == "bash"
    script = workspace / "step.sh"
    script.write_text(expand(spec["run"], inputs))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update({k: expand(str(v), inputs) for k, v in spec.get("env", {}).items()})
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}",
        GITHUB_ACTION_PATH=str(action_path),
        GITHUB_OUTPUT=str(workspace / "github_output"),
        NO_COLOR="1",
    )
    # the runner's own command line for `shell: bash`
    argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]
    return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)


def lint_step(workspace: Path, venv: Path, tree: tuple[Path, str], **given: str) -> tuple[int, dict, str]:
    """The lint step with these inputs over the action's defaults: (exit code, GITHUB_OUTPUT, the log)."""
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()} | given
    (lint,) = [s for s in ACTION["runs"]["steps"] if s.get("id") == "lint"]
    (workspace / "github_output").write_text("")  # each run of the step has a file of its own, as on the runner
    proc = step(lint, inputs, workspace, venv, action_path=tree[0])
    lines = (workspace / "github_output").read_text().splitlines()
    return proc.returncode, dict(line.split("=", 1) for line in lines), proc.stdout + proc.stderr


def test_the_steps_block_the_64_mib_default_and_write_its_sarif(tmp_path, venv, tree):
    (tmp_path / "docker-compose.yml").write_text(BAD)
    code, outputs, log = lint_step(tmp_path, venv, tree, paths="docker-compose.yml", **SEED)
    assert code == 1, log
    assert outputs == {"exit-code": "1", "sarif": "shmdoctor.sarif"}
    assert "docker-compose.yml:trainer: error shm-too-small: this loader needs 900 MiB of /dev/shm" in log
    # annotations by default: the finding as a workflow command at its file and line
    assert (
        "::error file=docker-compose.yml,line=3,title=shmdoctor shm-too-small%3A docker-compose.yml%3Atrainer::" in log
    )
    sarif = json.loads((tmp_path / "shmdoctor.sarif").read_text())
    (result,) = sarif_pydantic.Sarif.model_validate(sarif).runs[0].results
    assert result.rule_id == "shm-too-small" and "Fix: give /dev/shm 1.5 GiB" in result.message.text
    location = result.locations[0].physical_location
    assert (location.artifact_location.uri, location.region.start_line) == ("docker-compose.yml", 3)


def test_the_fixed_file_passes_and_fail_on_warning_blocks_a_guess(tmp_path, venv, tree):
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "compose.yaml").write_text(FIXED)
    code, outputs, log = lint_step(tmp_path, venv, tree, paths="deploy/", sarif="out/lint.sarif", **SEED)
    assert code == 0 and outputs["exit-code"] == "0", log
    assert json.loads((tmp_path / "out" / "lint.sarif").read_text())["runs"][0]["results"] == []
    # no loader: the 64 MiB default of a training image is a warning, which fail-on: warning makes block
    (tmp_path / "deploy" / "compose.yaml").write_text(BAD)
    code, outputs, log = lint_step(tmp_path, venv, tree, paths="deploy", **{"fail-on": "warning"})
    assert code == 1 and outputs["exit-code"] == "1", log
    assert "warning default-shm" in log


def test_paths_and_args_split_on_whitespace_and_are_never_run(tmp_path, venv, tree):
    """Inputs reach lint as words, never as shell: a `$(...)` in one is a file name that does not exist (exit 2),
    and no SARIF is promised for a run that judged nothing."""
    (tmp_path / "a.yml").write_text(FIXED)
    (tmp_path / "b.yml").write_text(BAD)
    code, outputs, log = lint_step(tmp_path, venv, tree, paths="a.yml\n b.yml", args="--gpus 1", **SEED)
    assert code == 1 and "b.yml:trainer: error shm-too-small" in log and "a.yml:trainer" in log, log
    code, outputs, log = lint_step(tmp_path, venv, tree, paths="$(touch pwned) *.yml", **SEED)
    assert code == 2 and outputs == {"exit-code": "2"}, log
    assert not (tmp_path / "pwned").exists() and "$(touch: no such file or directory" in log
