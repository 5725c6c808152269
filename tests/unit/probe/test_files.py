"""lint's inputs: a repository's directory holds more than workloads; those files are passed over, the rest judged."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import files
from shmdoctor.sizes import GiB, MiB

DATA = Path(__file__).resolve().parents[2] / "data"
CHART_JOB = (DATA / "manifests-bad" / "helm-unrendered.yaml").read_text()
# every placeholder quoted: valid YAML, and a manifest, whose values are not values yet
QUOTED_TEMPLATE = """apiVersion: batch/v1
kind: Job
metadata: {name: "{{ .Release.Name }}-train"}
spec:
  template:
    spec:
      containers:
        - name: trainer
          image: "{{ .Values.image }}"
          resources: {limits: {memory: "{{ .Values.memory }}"}}
"""


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A checkout as found: a compose file, a kustomization, a lock file, a chart (values, templates)."""
    shutil.copy(DATA / "manifests" / "docker-compose.yml", tmp_path / "docker-compose.yml")
    (tmp_path / "kustomization.yaml").write_text("resources:\n  - deployment.yaml\nimages:\n  - name: app\n")
    (tmp_path / "package-lock.json").write_text('{"name": "web", "lockfileVersion": 3, "packages": {}}\n')
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: ml\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("image: trainer:1\nmemory: 8Gi\n")
    (chart / "templates" / "job.yaml").write_text(CHART_JOB)
    (chart / "templates" / "quoted.yaml").write_text(QUOTED_TEMPLATE)
    return tmp_path


def test_a_repository_is_judged_and_the_rest_passed_over_with_why(repository):
    inputs = files.read([str(repository)])
    assert inputs.sources == [str(repository / "docker-compose.yml")]
    assert len(inputs.definitions) == 10  # every service of the compose file
    why = dict(line.split(": ", 1) for line in inputs.files)
    other = f"not {files.FORMATS}"
    render = "helm template CHART | shmdoctor lint -"
    template = f"an unrendered Helm template ({{{{ ... }}}}): render it first: {render}"
    assert why == {
        f"{repository}/chart/Chart.yaml:1": other,
        f"{repository}/chart/templates/job.yaml:5": template,
        f"{repository}/chart/templates/quoted.yaml:3": template,
        f"{repository}/chart/values.yaml": f"a Helm chart's values: render the chart: {render}",
        f"{repository}/kustomization.yaml:1": other,
        f"{repository}/package-lock.json": other,
    }


def test_the_cli_judges_the_rest_and_says_what_it_passed_over(repository, capsys):
    code = main(["lint", str(repository)])
    out = capsys.readouterr().out
    assert code == 0 and "shmdoctor lint: 10 services and workloads in 1 file" in out
    passed = [line for line in out.splitlines() if line.startswith("passed over ")]
    assert len(passed) == 6 and any(f"over {repository}/package-lock.json: not a compose file" in p for p in passed)


def test_nothing_to_judge_is_exit_2_in_one_line(repository, capsys):
    (repository / "docker-compose.yml").unlink()
    with pytest.raises(UsageError, match=r"^nothing to judge in 6 files: .*Chart.yaml:1: not a compose file"):
        files.read([str(repository)])
    assert main(["lint", str(repository / "chart" / "templates")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "an unrendered Helm template" in err


def test_a_bad_value_in_a_real_definition_is_still_bad_input(repository):
    bad = repository / "bad.yml"
    bad.write_text("services:\n  trainer:\n    image: x\n    shm_size: plenty\n")
    with pytest.raises(UsageError, match="bad.yml:3: service 'trainer': shm_size"):  # the file alone: one line
        files.read([str(bad)])
    inputs = files.read([str(repository)])  # in a directory: that file's error, and every other file judged
    assert [e.split(" as a size")[0] for e in inputs.errors] == [
        f"{bad}:3: service 'trainer': shm_size: cannot read 'plenty'"
    ]
    assert inputs.sources == [str(repository / "docker-compose.yml")] and len(inputs.definitions) == 10


def test_a_folder_run_never_stops_at_one_file(repository, capsys):
    """Each file that cannot be judged is one error line (text) or errors[] entry (JSON), exit 2; the rest judged."""
    (repository / "a-bad.yml").write_text("services:\n  trainer:\n    image: x\n    shm_size: plenty\n")
    (repository / "b-unset.yml").write_text("services:\n  web:\n    image: ${IMAGE:?set IMAGE}\n")
    (repository / "c-pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n")
    assert main(["lint", str(repository), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [e.split(": ", 1)[0] for e in doc["errors"]] == [
        f"{repository}/a-bad.yml:3",
        f"{repository}/b-unset.yml:3",
        f"{repository}/c-pod.yaml:4",
    ]
    assert len(doc["reports"]) == 10 and len(doc["files_passed_over"]) == 6
    assert main(["lint", str(repository)]) == 2
    out = capsys.readouterr().out
    assert "shmdoctor lint: 10 services and workloads in 1 file; 3 could not be judged" in out
    assert f"could not judge {repository}/a-bad.yml:3: service 'trainer': shm_size: cannot read 'plenty'" in out
    # several inputs are a folder run too: a missing one is an error beside the others' reports
    assert main(["lint", str(repository / "docker-compose.yml"), str(repository / "nowhere.yml")]) == 2
    out = capsys.readouterr().out
    assert "10 services and workloads in 1 file; 1 could not be judged" in out
    assert f"could not judge {repository}/nowhere.yml: no such file or directory" in out


COMPOSE_WITH_VARIABLES = "services:\n  trainer:\n    image: x\n    shm_size: ${SHM_SIZE:-64m}\n    mem_limit: ${MEM}\n"


def _shm_and_memory(inputs: files.Inputs) -> tuple[int, int | None]:
    [found] = inputs.definitions
    return found.facts.shm.size_bytes, found.facts.memory.limit_bytes


def test_compose_reads_the_env_file_beside_it_and_the_environment_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("SHM_SIZE", raising=False)
    monkeypatch.delenv("MEM", raising=False)
    (tmp_path / "docker-compose.yml").write_text(COMPOSE_WITH_VARIABLES)
    (tmp_path / ".env").write_text("SHM_SIZE=2g\nMEM='8g'\n")
    assert _shm_and_memory(files.read([str(tmp_path / "docker-compose.yml")])) == (2 * GiB, 8 * GiB)
    monkeypatch.setenv("SHM_SIZE", "1g")  # as docker compose does: the shell's value over the file's
    assert _shm_and_memory(files.read([str(tmp_path)])) == (GiB, 8 * GiB)
    other = tmp_path / "prod.env"
    other.write_text("MEM=16g\n")  # --env-file replaces .env
    monkeypatch.delenv("SHM_SIZE")
    assert _shm_and_memory(files.read([str(tmp_path / "docker-compose.yml")], env_file=str(other))) == (
        64 * MiB,
        16 * GiB,
    )


def test_stdin_reads_the_working_directorys_env_file(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("SHM_SIZE", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("SHM_SIZE=3g\nMEM=8g\n")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(COMPOSE_WITH_VARIABLES.encode())))
    assert main(["lint", "-", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["reports"][0]["shm"]["size_bytes"] == 3 * GiB


def test_a_bad_or_missing_env_file_is_exit_2_in_one_line(tmp_path, capsys):
    (tmp_path / "docker-compose.yml").write_text(COMPOSE_WITH_VARIABLES)
    (tmp_path / ".env").write_text("MEM=8g\nAPI_TOKEN hunter2\n")
    assert main(["lint", str(tmp_path / "docker-compose.yml")]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"shmdoctor: error: {tmp_path}/.env:2: not a KEY=VALUE line (an env file for compose's interpolation)\n"
    )
    assert main(["lint", str(tmp_path)]) == 2  # in a folder run: the compose file's error, never the value
    out = capsys.readouterr().out
    assert f"could not judge {tmp_path}/.env:2: not a KEY=VALUE line" in out and "hunter2" not in out
    # --env-file is the command line's: refused once, before any file is read
    assert main(["lint", str(tmp_path), "--env-file", str(tmp_path / "nowhere.env")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip().endswith("nowhere.env: cannot read: No such file or directory")


def test_placeholders_and_template_files_are_said_to_be_rendered_first(tmp_path, capsys):
    (tmp_path / "task.json").write_text(
        '{"family": "t",\n "containerDefinitions": [{"name": "c", "memory": ${MEM}}]}\n'
    )
    (tmp_path / "job.json").write_text(
        '{"family": "t", "containerDefinitions":\n [{"name": "c", "image": "x", "memory": "${MEM}"}]}\n'
    )
    (tmp_path / "docker-compose.yml.j2").write_text("services:\n  t: {image: '{{ image }}'}\n")
    (tmp_path / "_helpers.tpl").write_text('{{- define "x" -}}{{- end -}}\n')  # no format of lint's: not walked
    with pytest.raises(UsageError) as e:
        files.read([str(tmp_path)])
    render = "render it first: envsubst < {} | shmdoctor lint -"
    assert str(e.value) == (
        "nothing to judge in 3 files: "
        f"{tmp_path}/docker-compose.yml.j2: a template (.j2): render it first, then lint the result; "
        f"{tmp_path}/job.json:2: a template with ${{VAR}} placeholders: " + render.format(f"{tmp_path}/job.json") + "; "
        f"{tmp_path}/task.json:2: a template with ${{VAR}} placeholders: " + render.format(f"{tmp_path}/task.json")
    )
