"""CI container jobs: GitHub Actions' job containers and services (their `options` read as docker's flags) and
GitLab CI's jobs (at the runner's default /dev/shm, said as assumed); --fix writes a workflow's options, which
actionlint still accepts, and prints GitLab's for the runner's config.toml."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import ci, documents
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, ci_tool

REAL = DATA / "real" / "github-actions"
LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin

WORKFLOW = """name: gpu
on: [push]
jobs:
  gpu:
    runs-on: [self-hosted, linux]
    container:
      image: huggingface/transformers-all-latest-gpu
      options: --gpus 0 --shm-size "16gb" -e NCCL_P2P_DISABLE=1
    steps: [{run: python -m pytest}]
  plain:
    runs-on: ubuntu-latest
    container: pytorch/pytorch:latest
    services:
      db:
        image: postgres:16
        options: --health-cmd pg_isready
      model:
        image: vllm/vllm-openai
        options: --shm-size ${{ matrix.shm }} --ipc=${{ matrix.ipc }}
    strategy: {matrix: {shm: [1g], ipc: [private]}}
    steps: [{run: python train.py}]
  host:
    runs-on: ubuntu-latest
    steps: [{run: echo}]
"""


def read(text: str, source: str = "w.yml"):
    [doc] = documents.parse(text, source)
    return {d.facts.target.name.split(":", 1)[1]: d.facts for d in ci.probe_workflow(doc)}


def test_job_containers_and_services_as_the_runner_creates_them():
    found = read(WORKFLOW)
    assert list(found) == ["gpu", "plain", "plain/db", "plain/model"]  # `host` runs on the runner itself
    gpu = found["gpu"]
    assert (gpu.shm.size_bytes, gpu.gpus, gpu.nccl_env, gpu.form) == (
        16 * GiB,
        "0",
        (("NCCL_P2P_DISABLE", "1"),),
        "github-actions",
    )
    assert (found["plain"].shm.size_bytes, found["plain"].ml_signs) == (64 * MiB, ("image pytorch/pytorch:latest",))
    model = found["plain/model"]
    assert (model.shm.size_bytes, model.ipc.mode) == (None, "unknown")  # ${{ }} is the runner's to fill in
    assert found["gpu"].target.line == 7 and found["plain/db"].target.line == 15


def test_a_workflow_without_job_containers_is_passed_over_with_why(tmp_path, capsys):
    path = tmp_path / "ci.yml"
    path.write_text("on: push\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps: [{run: ruff check}]\n")
    assert main(["lint", str(path)]) == 2
    assert (
        "a GitHub Actions workflow with no job container: its jobs run on the runner itself" in capsys.readouterr().err
    )


def test_gitlab_jobs_take_their_image_through_extends_and_default(tmp_path, capsys):
    text = """image: python:3.11
stages: [test, train]
.gpu:
  image: {name: nvcr.io/nvidia/pytorch:24.01-py3}
lint:
  script: ruff check .
train:
  extends: [.gpu]
  script: [torchrun --nproc-per-node=2 train.py]
"""
    [doc] = documents.parse(text, ".gitlab-ci.yml")
    found = {d.facts.target.name: d for d in ci.probe_gitlab(doc)}
    assert list(found) == [".gitlab-ci.yml:lint", ".gitlab-ci.yml:train"]  # the hidden template runs nowhere
    train = found[".gitlab-ci.yml:train"]
    assert train.facts.ml_signs == ("image nvcr.io/nvidia/pytorch:24.01-py3", "command torchrun")
    assert train.facts.shm.size_bytes == 64 * MiB and train.notes == (ci.GITLAB_NOTE,)
    assert found[".gitlab-ci.yml:lint"].facts.ml_signs == ()
    path = tmp_path / ".gitlab-ci.yml"
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert path.read_text() == text  # the runner's config.toml sizes it, not this file
    err = capsys.readouterr().err
    assert "train: not written: GitLab's jobs cannot size /dev/shm: the runner's config.toml does" in err
    assert "[runners.docker] shm_size = 1610612736" in err


def test_fix_writes_the_options_and_actionlint_accepts_the_workflow(tmp_path, capsys):
    path = tmp_path / "w.yml"
    path.write_text(WORKFLOW)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1  # not into postgres: no ML sign, no loader
    after = path.read_text()
    assert after == WORKFLOW.replace(  # the gpu job's 16gb holds it
        "    container: pytorch/pytorch:latest\n",
        "    container:\n      image: pytorch/pytorch:latest\n      options: --shm-size=1536m\n",
    )
    assert main(["lint", str(path), "--fix", *LOADER]) == 0
    assert path.read_text() == after
    actionlint = ci_tool("actionlint")
    if actionlint:
        proc = subprocess.run([actionlint, "-shellcheck=", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("name", ["trl-tests.yml", "diffusers-benchmark.yml"])
def test_real_workflows_fix_and_lint_ok(tmp_path, capsys, name):
    shutil.copy(REAL / name, tmp_path / name)
    main(["lint", str(tmp_path / name), "--fix", *LOADER])
    capsys.readouterr()
    assert main(["lint", str(tmp_path / name), *LOADER]) in (0, 1)
    changed = (tmp_path / name).read_text() != (REAL / name).read_text()
    assert changed == (name == "trl-tests.yml")  # diffusers' --ipc host is not written over


def test_a_gitlab_file_whose_jobs_are_all_included_is_passed_over_not_read_as_compose(capsys):
    """Megatron-LM's .gitlab-ci.yml: `include:` lists its stage files, as compose's `include:` would."""
    path = DATA / "real" / "gitlab" / "megatron-lm" / ".gitlab-ci.yml"
    assert main(["lint", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"shmdoctor: error: {path}: a GitLab CI file with no job of its own (its jobs come from its include:)\n"
    )


GITLAB_RUNS = """variables:
  RUN_ARGS: "--shm-size=2g --ulimit stack=$$((1024*65536))"
  IMAGE: nvcr.io/nvidia/pytorch:24.01-py3
default:
  before_script:
    - docker login -u ci -p x registry
.gpu:
  variables:
    RUN_ARGS: "--ipc=host"
  script:
    - docker run --rm --gpus all $(eval echo ${RUN_ARGS}) $IMAGE python train.py
.setup:
  script:
    - docker run --rm --privileged multiarch/qemu-user-static --reset -p yes
sized:
  script:
    - docker pull ${IMAGE}
    - docker run --rm --gpus all $(echo ${RUN_ARGS}) ${IMAGE} python train.py
host:
  extends: .gpu
both:
  script:
    - !reference [.setup, script]
    - docker run --gpus 2 $SHM_ARGS ${IMAGE} torchrun train.py
"""


def test_gitlab_scripts_docker_runs_with_the_pipelines_variables(tmp_path, capsys):
    """Each docker run of a job's script is a container of its own: the global and the job's variables (through
    extends) put in, GitLab's $$ a $, $(echo ...) and $(eval echo ...) their words, !reference's lines included;
    a hidden template's runs nowhere; its fix is printed, the file left as written."""
    [doc] = documents.parse(GITLAB_RUNS, ".gitlab-ci.yml")
    found = {d.facts.target.name.removeprefix(".gitlab-ci.yml:"): d.facts for d in ci.probe_gitlab(doc)}
    assert list(found) == ["sized", "sized/docker-run-1", "host", "host/docker-run-1", "both"] + [
        "both/docker-run-1",
        "both/docker-run-2",
    ]
    sized, host = found["sized/docker-run-1"], found["host/docker-run-1"]
    assert (sized.shm.size_bytes, sized.gpus, sized.ml_signs[0]) == (2 * GiB, "all", "image " + _PYTORCH)
    assert (host.ipc.mode, host.gpus) == ("host", "all")  # the template's RUN_ARGS over the global one
    qemu, torch = found["both/docker-run-1"], found["both/docker-run-2"]
    assert (qemu.shm.size_bytes, qemu.ml_signs, torch.gpus) == (64 * MiB, (), "2")
    assert torch.unreadable  # $SHM_ARGS among its options: the file does not give it
    assert found["sized"].form == "gitlab-runner" and found["sized/docker-run-1"].form is None
    path = tmp_path / ".gitlab-ci.yml"
    path.write_text(GITLAB_RUNS.replace("$(echo ${RUN_ARGS})", "--shm-size=64m"))
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert path.read_text() == GITLAB_RUNS.replace("$(echo ${RUN_ARGS})", "--shm-size=64m")
    assert "sized/docker-run-1: not written: a docker run of a GitLab job's script: give the flag in the script" in (
        capsys.readouterr().err
    )


_PYTORCH = "nvcr.io/nvidia/pytorch:24.01-py3"


def test_real_gitlab_files_docker_runs_and_references():
    """NVIDIA/DALI's L0 tests run `docker run ... $(eval echo ${EXTRA_DOCKER_RUN_ARGS})` from a YAML anchor: 1 GiB
    from the pipeline's variables; nvidia-container-toolkit's jobs get their qemu registration through extends and
    GitLab's !reference tag (the file was refused as no YAML)."""
    lines = (DATA / "real" / "gitlab" / "dali" / ".gitlab-ci.yml").read_text()
    runs = [d.facts for d in ci.probe_gitlab(documents.parse(lines, "dali/.gitlab-ci.yml")[0])]
    sized = [f.shm.size_bytes for f in runs if ci.RUN_LABEL.search(f.target.name)]
    assert sized == [GiB] * 15 and len(runs) == 35
    text = (DATA / "real" / "gitlab" / "nvidia-container-toolkit" / ".gitlab-ci.yml").read_text()
    names = [d.facts.target.name for d in ci.probe_gitlab(documents.parse(text, "t/.gitlab-ci.yml")[0])]
    assert "t/.gitlab-ci.yml:image-ubi8/docker-run-1" in names and "t/.gitlab-ci.yml:go-build" in names
    assert len(names) == 35 and sum(bool(ci.RUN_LABEL.search(n)) for n in names) == 11


def test_gitlab_scripts_are_bounded_once_put_together(tmp_path, monkeypatch):
    """An anchor run by 20 jobs is 20 times its shell (at the real 8 MiB, a 1 MiB anchor: 3.5 s here): one line,
    before any is parsed past the bound; templates that extend ten others, ten deep (10^10 merges naively), are
    each merged once."""
    monkeypatch.setattr(ci, "MAX_SCRIPT_BYTES", 2**20)
    jobs = "".join(f"j{i}:\n  script: *run\n" for i in range(20))
    text = f".t:\n  script: &run\n    - docker run --rm img echo {'x' * 2**16}\n{jobs}"
    with pytest.raises(UsageError, match=r"^x/.gitlab-ci.yml:j15: more than 1 MiB of job scripts once anchors"):
        ci.probe_gitlab(documents.parse(text, "x/.gitlab-ci.yml")[0])
    path = tmp_path / ".gitlab-ci.yml"
    layers = [".l0:\n  script: [docker run --rm --shm-size=1g img]\n"]
    for level in range(1, 11):
        parents = ", ".join(f".l{level - 1}" for _ in range(10))
        layers.append(f".l{level}:\n  extends: [{parents}]\n")
    path.write_text("".join(layers) + "job:\n  extends: .l10\n")
    found = {d.facts.target.name: d.facts for d in ci.probe_gitlab(documents.parse(path.read_text(), str(path))[0])}
    assert found[f"{path}:job/docker-run-1"].shm.size_bytes == GiB
