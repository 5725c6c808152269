"""lint --fix on scripts and Makefiles: the flag the engine takes changed in place (or added after `run`), the rest
of the text as it was; a value from a variable, the host's /dev/shm and a --mount printed, not written."""

from __future__ import annotations

import shutil
import subprocess

from shmdoctor.cli import main
from tests.helpers import DATA

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB: 1.5 GiB with the margin


def fix(tmp_path, name: str, text: str) -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    code = main(["lint", str(path), "--fix", *LOADER])
    return code, path.read_text()


def test_each_flag_is_changed_where_it_is_written(tmp_path, capsys):
    text = """#!/bin/bash
# train
docker run --rm --shm-size 64m \\
    -v "$PWD:/w" pytorch/pytorch python train.py   # two lines
sudo docker run --shm-size=256m -m8g pytorch/pytorch python train.py
podman run --tmpfs /dev/shm:ro,size=64m pytorch/pytorch python train.py
docker run --gpus all pytorch/pytorch python train.py
"""
    code, after = fix(tmp_path, "train.sh", text)
    assert code == 1
    assert after == text.replace("--shm-size 64m", "--shm-size 1536m").replace(
        "--shm-size=256m", "--shm-size=1536m"
    ).replace("/dev/shm:ro,size=64m", "/dev/shm:size=1536m").replace(
        "docker run --gpus", "docker run --shm-size=1536m --gpus"
    )
    assert main(["lint", str(tmp_path / "train.sh"), *LOADER]) == 0  # the fixed script lints OK
    before = after
    assert main(["lint", str(tmp_path / "train.sh"), "--fix", *LOADER]) == 0
    assert (tmp_path / "train.sh").read_text() == before  # a second --fix changes nothing
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(tmp_path / "train.sh")]).returncode == 0


def test_what_is_not_the_engines_own_to_size_is_printed_not_written(tmp_path, capsys):
    text = """docker run --shm-size=$SHM pytorch/pytorch python train.py
docker run --ipc=host pytorch/pytorch python train.py
docker run --mount type=tmpfs,dst=/dev/shm,tmpfs-size=67108864 pytorch/pytorch python train.py
docker run -v /dev/shm:/dev/shm pytorch/pytorch python train.py
"""
    code, after = fix(tmp_path, "run.sh", text)
    assert after == text and code == 1
    err = capsys.readouterr().err
    assert (
        "run.sh:1: nothing to write: could not read the size of /dev/shm (--shm-size=$SHM: set from a variable" in err
    )
    assert "run.sh:3: not written: its /dev/shm is a --mount of type tmpfs" in err
    assert "run.sh:2: nothing to write" in err and "run.sh:4: nothing to write" in err


def test_a_makefile_recipe_is_fixed_in_its_tab_indented_line(tmp_path, capsys):
    text = "IMAGE ?= pytorch/pytorch\ntrain:\n\t@docker run --gpus all $(IMAGE) \\\n\t\tpython train.py\n"
    code, after = fix(tmp_path, "Makefile", text)
    assert code == 1 and after == text.replace("docker run --gpus", "docker run --shm-size=1536m --gpus")


def test_a_real_script_and_makefile(tmp_path, capsys):
    shutil.copytree(DATA / "real" / "scripts" / "ntga", tmp_path / "ntga")
    shutil.copy(DATA / "real" / "scripts" / "clam-docker_gpu.sh", tmp_path)
    assert main(["lint", str(tmp_path), "--fix", *LOADER]) == 1
    makefile = (tmp_path / "ntga" / "makefile").read_text()
    assert "sudo docker run --shm-size=1536m --rm --gpus all -it -v `pwd`:/app/ kitazawa/ntga bash" in makefile
    assert (tmp_path / "clam-docker_gpu.sh").read_text() == (
        DATA / "real" / "scripts" / "clam-docker_gpu.sh"
    ).read_text()
