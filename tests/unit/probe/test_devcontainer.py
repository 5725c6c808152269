"""devcontainer.json (JSON with comments and trailing commas) -> the container the devcontainers CLI starts: runArgs
read as docker run's, hostRequirements.gpu, mounts, containerEnv; hidden .devcontainer/ and .github/ read in a
folder run; --fix writes runArgs keeping comments, and json5 (an independent JSONC reader) reads the result."""

from __future__ import annotations

import shutil

import json5
import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import devcontainer
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA

REAL = DATA / "real" / "devcontainers"
LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin


def facts(text: str):
    [found], why = devcontainer.probe(text, "devcontainer.json")
    assert why is None
    return found.facts


def test_jsonc_is_read_as_the_cli_reads_it_with_every_offset_kept():
    text = """// a comment
{
  /* block
     comment */ "image": "pytorch/pytorch", // after
  "name": "a // not a comment, /* nor this */",
  "runArgs": ["--shm-size=2g", "--gpus", "all",], // trailing comma
  "containerEnv": {"NCCL_P2P_DISABLE": "1",},
}
"""
    plain = devcontainer.plain_json(text)
    assert len(plain) == len(text) and plain.count("\n") == text.count("\n")
    assert devcontainer.load(text, "devcontainer.json") == json5.loads(text)
    got = facts(text)
    assert (got.shm.size_bytes, got.gpus, got.nccl_env) == (2 * GiB, "all", (("NCCL_P2P_DISABLE", "1"),))
    assert (got.target.name, got.target.id) == ("devcontainer.json:devcontainer", "a // not a comment, /* nor this */")
    assert got.ml_signs == ("image pytorch/pytorch",) and got.runtime == "docker"


@pytest.mark.parametrize(
    "body, size, source, gpus",
    [
        ('"image": "x"', 64 * MiB, "docker-shm", None),
        ('"image": "x", "hostRequirements": {"gpu": true}', 64 * MiB, "docker-shm", "all"),
        ('"image": "x", "hostRequirements": {"gpu": "optional"}', 64 * MiB, "docker-shm", "all"),
        ('"image": "x", "hostRequirements": {"gpu": false}', 64 * MiB, "docker-shm", None),
        ('"runArgs": ["--ipc=host"]', None, "host-ipc", None),
        ('"runArgs": ["--shm-size", "8g"]', 8 * GiB, "docker-shm", None),
        ('"mounts": ["source=/dev/shm,target=/dev/shm,type=bind"]', None, "host", None),
        ('"mounts": [{"type": "tmpfs", "target": "/dev/shm"}]', None, "tmpfs", None),
        ('"runArgs": ["--shm-size=${localEnv:SHM}"]', None, "docker-shm", None),
    ],
)
def test_what_the_container_gets(body, size, source, gpus):
    got = facts("{" + body + "}")
    assert (got.shm.size_bytes, got.shm.source, got.gpus) == (size, source, gpus)


def test_a_compose_based_one_is_judged_in_its_compose_file_and_a_broken_one_is_bad_input():
    found, why = devcontainer.probe('{"dockerComposeFile": "c.yml", "service": "dev"}', "devcontainer.json")
    assert found == [] and why == (
        "devcontainer.json: a devcontainer made from a compose file (dockerComposeFile): its service is judged there"
    )
    with pytest.raises(UsageError, match=r"^devcontainer.json:4: not JSON with comments: Expecting value"):
        devcontainer.probe('{\n  "image": "x",\n  "runArgs": [\n', "devcontainer.json")
    with pytest.raises(UsageError, match="runArgs: 8 is not a string"):
        devcontainer.probe('{"runArgs": ["--shm-size", 8]}', "devcontainer.json")


def test_hidden_devcontainer_and_github_folders_are_read_other_hidden_ones_not(tmp_path, capsys):
    for folder in (".devcontainer", ".git", ".venv"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "devcontainer.json").write_text('{"image": "pytorch/pytorch"}')
    assert main(["lint", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 service or workload in 1 file" in out and ".devcontainer/devcontainer.json:devcontainer" in out


def test_fix_writes_runargs_and_keeps_every_comment(tmp_path, capsys):
    shutil.copy(REAL / "pytorch-cuda" / "devcontainer.json", tmp_path)
    path = tmp_path / "devcontainer.json"
    before = path.read_text()
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    after = path.read_text()
    assert after == before.replace('"runArgs": ["--gpus", "all"]', '"runArgs": ["--shm-size=1536m", "--gpus", "all"]')
    assert json5.loads(after)["runArgs"] == ["--shm-size=1536m", "--gpus", "all"]
    assert main(["lint", str(path), "--fix", *LOADER]) == 0 and path.read_text() == after  # nothing more to write


def test_fix_changes_the_size_in_place_or_adds_runargs(tmp_path, capsys):
    path = tmp_path / "devcontainer.json"
    path.write_text('{\n\t"image": "pytorch/pytorch", // pinned\n\t"runArgs": [\n\t\t"--shm-size", "64m",\n\t],\n}\n')
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert (
        path.read_text()
        == '{\n\t"image": "pytorch/pytorch", // pinned\n\t"runArgs": [\n\t\t"--shm-size", "1536m",\n\t],\n}\n'
    )
    path.write_text('{\n  // no runArgs\n  "image": "pytorch/pytorch"\n}\n')
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert (
        path.read_text() == '{\n  "runArgs": ["--shm-size=1536m"],\n  // no runArgs\n  "image": "pytorch/pytorch"\n}\n'
    )
    path.write_text('{"image": "pytorch/pytorch", "runArgs": [\n    "--gpus=all"\n]}')
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert json5.loads(path.read_text())["runArgs"] == ["--shm-size=1536m", "--gpus=all"]
    capsys.readouterr()
    assert main(["lint", str(path), *LOADER, "--format", "json"]) == 0
    assert '"form": "devcontainer"' not in capsys.readouterr().out  # ok: no fix to say


def test_the_fix_is_said_as_runargs(tmp_path, capsys):
    path = tmp_path / "devcontainer.json"
    path.write_text('{"image": "pytorch/pytorch"}')
    assert main(["lint", str(path), *LOADER]) == 1
    assert '"runArgs": ["--shm-size=1536m"]' in capsys.readouterr().out
