"""Compose file sets read as compose reads them (tests/data/compose-sets/): what lint resolves of each service,
written from the compose specification's merge rules; tests/integration/docker/test_compose_sets.py checks the
same projects against Docker Compose itself and starts them."""

from __future__ import annotations

import json
import shutil

import pytest

from shmdoctor.cli import main
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, assert_one_line_error, run_cli, validate

SETS = DATA / "compose-sets"

# project -> {service: (its /dev/shm in bytes, the file and line that set it)}
EXPECTED = {
    "pair": {"train": (16 * GiB, "compose.yaml", 5), "serve": (64 * MiB, "compose.override.yaml", 7)},
    "extends": {
        "base": (8 * GiB, "compose.yaml", 4),
        "eval": (8 * GiB, "compose.yaml", 4),  # base's shm_size, inherited
        "gpu": (2 * GiB, "common.yml", 4),  # from the file it extends
    },
    "include": {"train": (4 * GiB, "gpu/compose.yaml", 5), "web": (64 * MiB, "compose.yaml", 5)},
    "reset": {
        "ray": (2 * GiB, "compose.override.yaml", 4),  # ipc: host reset: its shm_size counts
        "worker": (1 * GiB, "compose.yaml", 7),  # the tmpfs at /dev/shm overridden away: shm_size again
    },
    "dotenv": {"train": (12 * GiB, "gpu.yml", 3)},
}


@pytest.fixture
def lint_json(capsys):
    """lint's JSON document, the CLI run in this process (the fast lane's time)."""

    def run(*args: str) -> dict:
        code = main(["lint", *args, "--format", "json"])
        out, err = capsys.readouterr()
        assert code in (0, 1), err
        return validate(json.loads(out))

    return run


@pytest.fixture
def lint(capsys):
    """(exit code, stdout, stderr) of the CLI run in this process."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(["lint", *args])
        return (code, *capsys.readouterr())

    return run


def reports(doc: dict) -> dict[str, dict]:
    return {r["target"]["name"].rsplit(":", 1)[1]: r for r in doc["reports"]}


@pytest.mark.parametrize("project", sorted(EXPECTED))
def test_a_folder_run_reports_each_service_once_as_compose_resolves_it(project, lint_json):
    found = reports(lint_json(str(SETS / project)))
    assert sorted(found) == sorted(EXPECTED[project])  # once each: no file of the set judged alone
    for name, (size, file, line) in EXPECTED[project].items():
        target = found[name]["target"]
        assert found[name]["shm"]["size_bytes"] == size, name
        assert (target["file"], target["line"]) == (str(SETS / project / file), line), name


def test_the_other_files_of_a_set_are_related_locations(lint_json):
    train = reports(lint_json(str(SETS / "pair")))["train"]["target"]
    assert train["name"] == f"{SETS}/pair/compose.yaml:train"
    assert [(p["file"], p["line"], p["name"]) for p in train["related"]] == [
        (f"{SETS}/pair/compose.override.yaml", 3, "train")
    ]
    gpu = reports(lint_json(str(SETS / "extends")))["gpu"]["target"]
    assert [(p["file"], p["name"]) for p in gpu["related"]] == [(f"{SETS}/extends/compose.yaml", "gpu")]


def test_a_file_named_alone_is_read_alone_as_compose_f_reads_it(lint_json):
    found = reports(lint_json(str(SETS / "pair" / "compose.yaml")))
    assert found["serve"]["shm"]["size_bytes"] == 2 * GiB  # no override without -f for it


def test_the_compose_file_option_stacks_files_as_compose_f(lint_json):
    files = [SETS / "dotenv" / "base.yml", SETS / "dotenv" / "gpu.yml"]
    found = reports(lint_json(*(a for f in files for a in ("--compose-file", str(f)))))
    assert found["train"]["shm"]["size_bytes"] == 12 * GiB
    both = lint_json(str(SETS / "pair"), "--compose-file", str(files[0]), "--compose-file", str(files[1]))
    assert sorted(r["target"]["name"].rsplit("/", 2)[-2:] for r in both["reports"]) == [
        ["dotenv", "base.yml:train"],
        ["pair", "compose.yaml:serve"],
        ["pair", "compose.yaml:train"],
    ]


@pytest.mark.parametrize(
    "path, base",
    [
        ("pair/compose.override.yaml", "pair/compose.yaml"),  # named as an override
        ("dotenv/gpu.yml", None),  # a service with neither image nor build, no default base beside it
    ],
)
def test_an_override_read_alone_exits_2_naming_the_base_it_needs(path, base):
    proc = run_cli("lint", str(SETS / path))
    assert_one_line_error(proc, 2, "an override, read over its base")
    assert (f"--compose-file {SETS / base}" if base else "--compose-file BASE") in proc.stderr


def test_fix_writes_once_into_the_file_that_sets_the_value_and_then_the_set_lints_ok(tmp_path, lint, lint_json):
    project = tmp_path / "pair"
    shutil.copytree(SETS / "pair", project)
    loader = ("--batch-size", "64", "--num-workers", "8", "--sample-bytes", "2MiB")
    base, override = (project / "compose.yaml").read_text(), (project / "compose.override.yaml").read_text()
    assert lint(str(project), *loader, "--fix")[0] == 1
    # serve's 64m is the override's: written there; train's 16g is enough and stays
    assert (project / "compose.yaml").read_text() == base
    assert (project / "compose.override.yaml").read_text() == override.replace("shm_size: 64m", "shm_size: 3g")
    code, _, err = lint(str(project), *loader, "--fix")
    assert code == 0 and "fixed" not in err, err
    assert (project / "compose.override.yaml").read_text() == override.replace("shm_size: 64m", "shm_size: 3g")
    assert {r["verdict"] for r in lint_json(str(project), *loader)["reports"]} == {"ok"}


def test_fix_of_a_value_no_file_sets_goes_into_the_base_unless_another_set_reads_it(tmp_path, lint):
    (tmp_path / "compose.yaml").write_text("services:\n  train:\n    image: pytorch/pytorch\n")
    (tmp_path / "compose.override.yaml").write_text("services:\n  train:\n    environment: [A=1]\n")
    (tmp_path / "gpu.yml").write_text("services:\n  train:\n    environment: [B=1]\n")
    loader = ("--batch-size", "64", "--num-workers", "8", "--sample-bytes", "2MiB")
    diff = lint(str(tmp_path), *loader, "--diff")[1]
    assert "compose.yaml" in diff and "override" not in diff, diff
    shared = ("--compose-file", str(tmp_path / "compose.yaml"), "--compose-file", str(tmp_path / "gpu.yml"))
    assert lint(str(tmp_path), *shared, *loader, "--fix")[0] == 1
    assert "shm_size" not in (tmp_path / "compose.yaml").read_text()  # read by two sets: each its own override
    assert "shm_size: 3g" in (tmp_path / "compose.override.yaml").read_text()
    assert "shm_size: 3g" in (tmp_path / "gpu.yml").read_text()


def test_extends_cycles_and_missing_bases_are_one_line_each(tmp_path, lint):
    (tmp_path / "compose.yaml").write_text(
        "services:\n  a:\n    image: x\n    extends: b\n  b:\n    image: x\n    extends: a\n"
    )
    code, out, err = lint(str(tmp_path / "compose.yaml"))
    assert (code, out, err.count("\n")) == (2, "", 1) and "extends makes a cycle" in err, err
    (tmp_path / "compose.yaml").write_text("services:\n  a:\n    image: x\n    extends: {file: none.yml, service: b}\n")
    code, out, err = lint(str(tmp_path / "compose.yaml"))
    assert (code, out, err.count("\n")) == (2, "", 1) and "extends names none.yml" in err, err
    (tmp_path / "compose.yaml").write_text("include: [compose.yaml]\nservices:\n  a:\n    image: x\n")
    code, out, err = lint(str(tmp_path / "compose.yaml"))
    assert (code, out, err.count("\n")) == (2, "", 1) and "include makes a cycle" in err, err


def test_a_reset_shm_size_in_one_file_is_the_default_and_the_file_is_yaml(tmp_path, lint_json):
    (tmp_path / "c.yml").write_text("services:\n  a:\n    image: x\n    shm_size: !reset 2g\n")
    assert reports(lint_json(str(tmp_path / "c.yml")))["a"]["shm"]["size_bytes"] == 64 * MiB
