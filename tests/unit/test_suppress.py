"""Suppression, end to end on real files with the real CLI: a `# shmdoctor: ignore=` comment and a shmdoctor.ignore
label or annotation silence their rule for their own workload only; the finding stays listed, marked, in the text,
the JSON and SARIF (`suppressions`); --ignore and --select do the same for a whole command, as ruff spells them; a
rule that does not exist is exit 2 with one line."""

from __future__ import annotations

import json

import pytest

from tests.helpers import DATA, assert_one_line_error, forked_cli, valid_sarif, validate

FILES = DATA / "suppress"  # trainers on the engine's default 64 MiB: default-shm, a warning, for each
SILENCED = {  # target -> what its suppression says
    "compose.yml:commented": f"the comment at {FILES / 'compose.yml'}:4",
    "compose.yml:labelled": "its shmdoctor.ignore label",
    "job.yaml:Job/annotated": "its shmdoctor.ignore label",
    "job.yaml:Job/commented": f"the comment at {FILES / 'job.yaml'}:27",
}
PLAIN = ("compose.yml:plain", "job.yaml:Job/plain")


def lint_json(*args: str) -> tuple[int, dict[str, dict]]:
    proc = forked_cli("lint", str(FILES), *args, "--format", "json")
    assert proc.stderr == "", proc.stderr
    doc = validate(json.loads(proc.stdout))
    return proc.returncode, {r["target"]["name"].removeprefix(f"{FILES}/"): r for r in doc["reports"]}


def default_shm(report: dict) -> dict:
    (finding,) = [f for f in report["findings"] if f["id"] == "default-shm"]
    return finding


def test_a_comment_a_label_and_an_annotation_silence_their_own_workload_only():
    code, reports = lint_json("--fail-on", "warning")
    assert code == 1  # the plain ones still fail at warning
    assert set(reports) == set(SILENCED) | set(PLAIN)
    for name, by in SILENCED.items():
        assert default_shm(reports[name])["suppressed"] == {"by": by, "kind": "inSource"}, name
        assert reports[name]["verdict"] == "ok", name
    for name in PLAIN:
        assert default_shm(reports[name])["suppressed"] is None
        assert reports[name]["verdict"] == "fail"  # at --fail-on warning


def test_silenced_alone_the_file_passes_at_warning(tmp_path):
    text = (FILES / "compose.yml").read_text()
    (tmp_path / "compose.yml").write_text(text.split("  plain:")[0])
    assert forked_cli("lint", str(tmp_path / "compose.yml"), "--fail-on", "warning").returncode == 0
    (tmp_path / "compose.yml").write_text(text.replace("# shmdoctor: ignore=default-shm", "# a comment"))
    assert forked_cli("lint", str(tmp_path / "compose.yml"), "--fail-on", "warning").returncode == 1


def test_the_text_lists_what_was_ignored_and_by_what():
    proc = forked_cli("lint", str(FILES / "compose.yml"))
    assert f"compose.yml:commented: ignored default-shm by the comment at {FILES / 'compose.yml'}:4" in proc.stdout
    assert "compose.yml:labelled: ignored default-shm by its shmdoctor.ignore label" in proc.stdout
    assert "compose.yml:plain: warning default-shm: /dev/shm is the default 64 MiB" in proc.stdout


def test_sarif_lists_the_suppressed_results_with_their_justification():
    proc = forked_cli("lint", str(FILES), "--format", "sarif")
    results = valid_sarif(proc.stdout)["runs"][0]["results"]
    by_target = {r["locations"][0]["logicalLocations"][0]["name"].removeprefix(f"{FILES}/"): r for r in results}
    for name, by in SILENCED.items():
        assert by_target[name]["suppressions"] == [{"kind": "inSource", "status": "accepted", "justification": by}]
    for name in PLAIN:
        assert "suppressions" not in by_target[name]
    assert len(results) == len(SILENCED) + len(PLAIN)  # none dropped


@pytest.mark.parametrize(
    "args, code, suppressed_by",
    [
        ([], 1, None),
        (["--ignore", "default-shm"], 0, "--ignore"),
        (["--ignore", "probe-incomplete", "--ignore", "default-shm"], 0, "--ignore"),  # repeatable
        (["--ignore", "probe-incomplete,default-shm"], 0, "--ignore"),  # comma-separated
        (["--select", "shm-too-small,no-shm"], 0, "not in --select"),
        (["--select", "default-shm"], 1, None),
    ],
)
def test_ignore_and_select_change_the_verdict(args, code, suppressed_by):
    got, reports = lint_json("--fail-on", "warning", *args)
    assert got == code
    assert default_shm(reports["compose.yml:plain"])["suppressed"] == (
        None if suppressed_by is None else {"by": suppressed_by, "kind": "external"}
    )
    assert default_shm(reports["compose.yml:labelled"])["suppressed"]["kind"] == "inSource"  # its own comes first


def test_check_takes_ignore_too():
    """This machine, asked for far more than it has: shm-too-small fails it; ignored, it passes, the finding listed."""
    huge = ["--batch-size", "1000", "--num-workers", "8", "--sample-bytes", "1GiB", "--format", "json"]
    failed = forked_cli("check", *huge)
    assert failed.returncode == 1
    fired = {f["id"] for f in json.loads(failed.stdout)["findings"] if f["severity"] == "error"}
    assert "shm-too-small" in fired
    passed = forked_cli("check", *huge, "--ignore", ",".join(fired))
    assert passed.returncode == 0
    doc = validate(json.loads(passed.stdout))
    assert {f["id"] for f in doc["findings"] if f["suppressed"]} >= fired


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "services:\n  # shmdoctor: ignore=default-shm,no-such-rule\n  t:\n    image: pytorch/pytorch\n",
            "compose.yml:2: # shmdoctor: ignore=: no rule 'no-such-rule'",
        ),
        (
            "services:\n  t:\n    image: pytorch/pytorch\n    labels:\n      shmdoctor.ignore: default_shm\n",
            "compose.yml: its shmdoctor.ignore label: no rule 'default_shm'",
        ),
        ("services:\n  t:  # shmdoctor: ignore=\n    image: pytorch/pytorch\n", "name 1 to 64 rules"),
    ],
)
def test_an_ignore_naming_no_rule_is_exit_2(tmp_path, text, message):
    (tmp_path / "compose.yml").write_text(text)
    assert_one_line_error(forked_cli("lint", str(tmp_path / "compose.yml")), 2, message)


@pytest.mark.parametrize("command", ["check", "lint", "audit", "exporter"])
def test_an_unknown_rule_on_the_command_line_is_exit_2(command):
    paths = [str(FILES)] if command == "lint" else []
    proc = forked_cli(command, *paths, "--ignore", "default-shm,shm-tiny")
    assert_one_line_error(proc, 2, "--ignore: no rule 'shm-tiny'")


LABELLED = DATA / "suppress-labels"  # a script, a Makefile, a devcontainer and a Quadlet unit, each a GPU trainer


def test_the_run_lines_devcontainers_and_quadlet_units_take_the_label_too():
    """`docker run --label shmdoctor.ignore=...` (and -l) in a script and a Makefile, a devcontainer's runArgs, a
    Quadlet unit's Label=: each silences its own container only (train.sh's second line still warns)."""
    proc = forked_cli("lint", str(LABELLED), "--fail-on", "warning", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = validate(json.loads(proc.stdout))
    reports = {r["target"]["name"].removeprefix(f"{LABELLED}/"): r for r in doc["reports"]}
    silenced = ("train.sh:4", "Makefile:3", ".devcontainer/devcontainer.json:devcontainer", "train.container:train")
    assert set(reports) == {*silenced, "train.sh:5"}
    for name in silenced:
        assert default_shm(reports[name])["suppressed"] == {"by": "its shmdoctor.ignore label", "kind": "inSource"}
    assert default_shm(reports["train.sh:5"])["suppressed"] is None


@pytest.mark.parametrize(
    "name, text",
    [
        ("run.sh", "docker run --gpus all --label shmdoctor.ignore=default_shm pytorch/pytorch python t.py\n"),
        ("t.container", "[Container]\nImage=pytorch/pytorch\nLabel=shmdoctor.ignore=default_shm\n"),
    ],
)
def test_a_label_in_a_file_naming_no_rule_is_exit_2(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    assert_one_line_error(forked_cli("lint", str(tmp_path / name)), 2, "no rule 'default_shm'")
