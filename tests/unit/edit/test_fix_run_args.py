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


@pytest.mark.parametrize(
    "text, expected",
    [
        (  # an args string: the flag first in it
            "pipeline {\n  agent {\n    docker {\n      image 'pytorch/pytorch'\n      args '--gpus all'\n"
            "    }\n  }\n}\n",
            "pipeline {\n  agent {\n    docker {\n      image 'pytorch/pytorch'\n"
            "      args '--shm-size=1536m --gpus all'\n"
            "    }\n  }\n}\n",
        ),
        (  # no args: a line below the image's, indented as it is
            "pipeline {\n\tagent {\n\t\tdocker {\n\t\t\timage 'pytorch/pytorch'\n\t\t}\n\t}\n}\n",
            "pipeline {\n\tagent {\n\t\tdocker {\n\t\t\timage 'pytorch/pytorch'\n"
            "\t\t\targs '--shm-size=1536m'\n\t\t}\n\t}\n}\n",
        ),
        (  # scripted, .inside(): the args in the parentheses
            "node {\n  docker.image('pytorch/pytorch').inside() {\n    sh 'python train.py'\n  }\n}\n",
            "node {\n  docker.image('pytorch/pytorch').inside('--shm-size=1536m') {\n"
            "    sh 'python train.py'\n  }\n}\n",
        ),
        (  # scripted, .inside { }: parentheses added
            "node {\n  docker.image('pytorch/pytorch').inside {\n    sh 'python train.py'\n  }\n}\n",
            "node {\n  docker.image('pytorch/pytorch').inside('--shm-size=1536m') {\n"
            "    sh 'python train.py'\n  }\n}\n",
        ),
        (  # scripted, an args string: the flag first in it
            "node {\n  docker.image('pytorch/pytorch').inside('--gpus all') {\n    sh 'python train.py'\n  }\n}\n",
            "node {\n  docker.image('pytorch/pytorch').inside('--shm-size=1536m --gpus all') {\n"
            "    sh 'python train.py'\n  }\n}\n",
        ),
        (  # the shorthand: a block with the args
            "pipeline {\n  agent { dockerfile true }\n  stages { stage('a') { steps { sh 'python train.py' } } }\n}\n",
            "pipeline {\n  agent { dockerfile { args '--shm-size=1536m' } }\n"
            "  stages { stage('a') { steps { sh 'python train.py' } } }\n}\n",
        ),
        (  # an sh step's docker run: a script's
            "node {\n  sh 'docker run --gpus all pytorch/pytorch python train.py'\n}\n",
            "node {\n  sh 'docker run --shm-size=1536m --gpus all pytorch/pytorch python train.py'\n}\n",
        ),
    ],
)
def test_jenkins_agent_gets_the_flag_in_its_args(tmp_path, text, expected):
    assert fixed(tmp_path, "Jenkinsfile", text) == expected
