"""--fix where the size is a run command's flag inside another file's syntax: a devcontainer's runArgs (a JSON list
with comments) and a Jenkins agent's args (a Groovy string). Each expected file is written out by hand from the
format's rules: the flag first in the list or args, everything else byte for byte as it was."""

from __future__ import annotations

import pytest

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin


def fixed(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    after = path.read_text()
    assert main(["lint", str(path), "--fix", *LOADER]) == 0 and path.read_text() == after  # idempotent
    return after


@pytest.mark.parametrize(
    "text, expected",
    [
        (  # a long list: the new argument on a line of its own, indented as the list's
            '{\n  "image": "pytorch/pytorch",\n  "runArgs": [\n      "--gpus=all"\n  ]\n}\n',
            '{\n  "image": "pytorch/pytorch",\n  "runArgs": [\n      "--shm-size=1536m",\n      "--gpus=all"\n  ]\n}\n',
        ),
        (  # a list on one line: first in it, then a comma
            '{"image": "pytorch/pytorch", "runArgs": ["--gpus", "all"]} // end\n',
            '{"image": "pytorch/pytorch", "runArgs": ["--shm-size=1536m", "--gpus", "all"]} // end\n',
        ),
        (  # an empty list: no comma
            '{"image": "pytorch/pytorch", "runArgs": [ ]}\n',
            '{"image": "pytorch/pytorch", "runArgs": ["--shm-size=1536m" ]}\n',
        ),
        (  # no runArgs: a key first in the object, indented as its keys
            '{\n    "name": "x", /* kept */\n    "image": "pytorch/pytorch"\n}\n',
            '{\n    "runArgs": ["--shm-size=1536m"],\n    "name": "x", /* kept */\n    "image": "pytorch/pytorch"\n}\n',
        ),
    ],
)
def test_devcontainer_gets_the_flag_first_in_runargs(tmp_path, text, expected):
    assert fixed(tmp_path, "devcontainer.json", text) == expected
