"""The loader options apply to the targets that look like they use /dev/shm (an ML image or command, GPUs, an
inference server), to all when none does, to those --workload names when given; the same in lint, audit and the
exporter; JSON says which got the loader, the text says why the others did not; --fix writes into no other."""

from __future__ import annotations

import json

from shmdoctor.cli import main
from shmdoctor.fleet import judge_labelled
from shmdoctor.probe import docker, documents
from shmdoctor.probe.compose import probe
from shmdoctor.workload import NOT_LIKELY, NOT_NAMED, Workload, selection

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin
STACK = """services:
  web:
    image: nginx:1.27
  db:
    image: postgres:16
    environment: {POSTGRES_PASSWORD: example}
  trainer:
    image: pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime
    command: python train.py
"""


def facts_of(text: str):
    [doc] = documents.parse(text, "c.yml")
    return [d.facts for d in probe(doc, environ={})]


def test_a_stack_with_a_web_server_and_a_database_fixes_only_the_trainer(tmp_path, capsys):
    path = tmp_path / "docker-compose.yml"
    path.write_text(STACK)
    assert main(["lint", str(path), *LOADER, "--fix"]) == 1
    assert path.read_text() == STACK + "    shm_size: 1536m\n"
    capsys.readouterr()
    assert main(["lint", str(path), *LOADER, "--format", "json"]) == 0  # the fixed file lints OK
    reports = {r["target"]["name"].rsplit(":", 1)[1]: r for r in json.loads(capsys.readouterr().out)["reports"]}
    assert reports["trainer"]["requirement"]["loader"]["batch_size"] == 100
    assert reports["web"]["requirement"] is None and reports["web"]["notes"] == [NOT_LIKELY]
    assert main(["lint", str(path), *LOADER]) == 0
    assert (
        f"{path}:db: note: loader options not applied: it does not look like it uses /dev/shm"
        in capsys.readouterr().out
    )


def test_workload_names_the_targets_and_a_pattern_takes_them_all(tmp_path, capsys):
    path = tmp_path / "docker-compose.yml"
    path.write_text(STACK)
    assert main(["lint", str(path), *LOADER, "--workload", "db", "--format", "json"]) == 1
    reports = {r["target"]["name"].rsplit(":", 1)[1]: r for r in json.loads(capsys.readouterr().out)["reports"]}
    assert reports["db"]["verdict"] == "fail" and reports["trainer"]["notes"] == [NOT_NAMED]
    assert main(["lint", str(path), *LOADER, "--workload", "*", "--format", "json"]) == 1
    assert all(r["requirement"] for r in json.loads(capsys.readouterr().out)["reports"])


def test_the_rule_of_selection():
    web, db, trainer = facts_of(STACK)
    assert selection([web, db, trainer], ()) == [NOT_LIKELY, NOT_LIKELY, ""]
    assert selection([web, db], ()) == ["", ""]  # none looks like it: the loader is for them all
    gpu = facts_of("services:\n  app:\n    image: my/app\n    gpus: all\n")
    assert selection([web, *gpu], ()) == [NOT_LIKELY, ""]
    assert selection([web, db, trainer], ("c.yml:web", "tr*")) == ["", NOT_NAMED, ""]


def test_a_label_still_applies_where_the_command_lines_loader_does_not():
    [web] = facts_of("services:\n  web:\n    image: nginx\n")
    report = judge_labelled(
        web,
        Workload.parse("batch_size=100,num_workers=4,sample_bytes=1MiB"),
        "batch_size=8,num_workers=1,sample_bytes=1k",
        "error",
        skipped=NOT_LIKELY,
    )
    assert report.requirement is not None and report.requirement.loader.batch_size == 8
    assert NOT_LIKELY in report.notes


def test_audit_chooses_among_the_engines_containers_the_same_way():
    def container(name: str, image: str, cmd: list[str]) -> docker.Probed:
        info = {"Id": name * 8, "Name": f"/{name}", "Config": {"Image": image, "Cmd": cmd}, "HostConfig": {}}
        return docker.facts_from_inspect(info)

    probed = [container("web", "nginx", ["nginx"]), container("train", "pytorch/pytorch", ["torchrun", "t.py"])]
    assert selection([p.facts for p in probed], ()) == [NOT_LIKELY, ""]
    assert selection([p.facts for p in probed], ("web",)) == ["", NOT_NAMED]
