"""Shell scripts and Makefiles -> one Facts per docker / podman / nerdctl run command, read as the engine reads it
(runargs.py): continuations, quotes, variables as unknowns, $(...), sudo and exec, recipes' prefixes."""

from __future__ import annotations

import json
import shlex

import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import shell
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA

SCRIPTS = DATA / "real" / "scripts"


def one(text: str, source: str = "run.sh"):
    [found] = shell.probe(text, source)
    return found.facts


@pytest.mark.parametrize(
    "line, size, source, ipc",
    [
        ("docker run img", 64 * MiB, "docker-shm", "private"),
        ("docker run --shm-size=2g img", 2 * GiB, "docker-shm", "private"),
        ("docker run --shm-size 16gb img", 16 * GiB, "docker-shm", "private"),  # transformers' CI spelling
        ('docker run --shm-size "8G" img', 8 * GiB, "docker-shm", "private"),
        ("docker run --shm-size=1g --shm-size=2g img", 2 * GiB, "docker-shm", "private"),  # the last one counts
        ("docker run --shm-size=0 img", 64 * MiB, "docker-shm", "private"),  # 0: Docker's default
        ("podman run img", 64000 * 1024, "podman-shm", "private"),
        ("podman run --shm-size=0 img", None, "podman-shm", "private"),  # 0: Podman's no limit
        ("nerdctl run --shm-size=1g img", GiB, "docker-shm", "private"),
        ("docker run --ipc=host --shm-size=1g img", None, "host-ipc", "host"),  # shm-size ignored
        ("docker run --ipc host img", None, "host-ipc", "host"),
        ("docker run --ipc=none img", None, "none", "none"),
        ("docker run --ipc=container:db img", None, "unknown", "container"),
        ("docker run --tmpfs /dev/shm:rw,size=512m --shm-size=8g img", 512 * MiB, "tmpfs", "private"),  # mount wins
        ("docker run --mount type=tmpfs,dst=/dev/shm,tmpfs-size=1073741824 img", GiB, "tmpfs", "private"),
        ("docker run -v /dev/shm:/dev/shm img", None, "host", "private"),
        ("docker run --mount type=bind,source=/dev/shm,target=/dev/shm img", None, "host", "private"),
        ("docker run -v /dev:/dev --shm-size=8g img", None, "host", "private"),  # moby drops its own /dev mounts
        ("docker run -v shm:/dev/shm img", None, "unknown", "private"),  # a named volume
        ("docker run --shm-size=$SHM img", None, "docker-shm", "private"),  # a variable: not known
    ],
)
def test_run_flags_as_the_engine_reads_them(line, size, source, ipc):
    facts = one(line)
    assert (facts.shm.size_bytes, facts.shm.source, facts.ipc.mode) == (size, source, ipc)


def test_a_command_is_found_wherever_a_shell_would_run_it():
    text = """#!/bin/bash
set -e  # docker run in a comment is none
echo "docker run quoted is none"
CID=$(sudo -E docker run -d --shm-size=1g img)
A=1 exec nohup docker container run --shm-size=2g \\
    --gpus all img python train.py &
if true; then podman --root /x run --shm-size=3g img; fi
docker -H tcp://h:2375 create --shm-size=4g img && docker start x
`nvidia-docker run --shm-size=5g img`
docker build -t x . ; docker exec x ls; docker compose run trainer
"""
    found = shell.probe(text, "s.sh")
    assert [(d.facts.target.name, d.facts.shm.size_bytes) for d in found] == [
        ("s.sh:4", GiB),
        ("s.sh:5", 2 * GiB),
        ("s.sh:7", 3 * GiB),
        ("s.sh:8", 4 * GiB),
        ("s.sh:9", 5 * GiB),
    ]
    assert found[1].facts.gpus == "all" and found[1].facts.ml_signs == ("command train.py",)
    assert found[4].facts.gpus == "all"  # nvidia-docker's wrapper gives every GPU


def test_image_command_gpus_memory_env_and_label():
    facts = one(
        "docker run --gpus '\"device=0,1\"' -m 8g -e NCCL_P2P_DISABLE=1 --label shmdoctor.loader=batch_size=8 "
        "--entrypoint torchrun nvcr.io/nvidia/pytorch:24.01-py3 --nproc-per-node=2 train.py"
    )
    assert (facts.gpus, facts.gpu_count, facts.memory.limit_bytes) == ("0,1", None, 8 * GiB)
    assert facts.nccl_env == (("NCCL_P2P_DISABLE", "1"),)
    assert facts.ml_signs == ("image nvcr.io/nvidia/pytorch:24.01-py3", "command torchrun")
    assert shell.probe("docker run -l shmdoctor.loader=batch_size=8 img", "a.sh")[0].loader_spec == "batch_size=8"


@pytest.mark.parametrize(
    "line, gpus",
    [
        ("docker run --gpus all img", "all"),
        ("docker run --gpus=2 img", "2"),
        ("docker run --gpus count=4,capabilities=compute img", "4"),
        ("docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=0 img", "0"),
        ("podman run --device nvidia.com/gpu=all img", "all"),
        ("docker run --device /dev/kfd --device /dev/dri img", "all"),  # AMD
        ("docker run --gpus $GPUS img", "some"),
        ("docker run img", None),
    ],
)
def test_gpus(line, gpus):
    assert one(line).gpus == gpus


def test_a_variable_among_the_options_may_set_anything_and_is_said():
    facts = one("docker run $DOCKER_ARGS --gpus all nvcr.io/nvidia/pytorch:24.01-py3 python train.py")
    assert facts.shm.size_bytes == 64 * MiB  # what the file says, and that a variable may say otherwise
    assert facts.unreadable == (
        "the size of /dev/shm ($DOCKER_ARGS among the options may set --shm-size, --ipc or a mount)",
    )
    image = one('docker run --rm -it --shm-size=2g "$IMAGE" bash')  # the image's variable is the image
    assert (image.unreadable, image.shm.size_bytes) == ((), 2 * GiB)


def test_makefile_variables_and_recipe_prefixes():
    text = "GPU := 1\nrun:\n\t@docker run --gpus '\"device=$(GPU)\"' --shm-size=$${SHM:-1g} $(IMAGE) bash\n"
    facts = one(text, "Makefile")
    assert (facts.gpus, facts.shm.size_bytes, facts.target.name) == ("some", None, "Makefile:3")


def test_bad_input_is_one_line_naming_the_line():
    with pytest.raises(UsageError, match=r"^run.sh:2: docker run with no image"):
        shell.probe("# a script\ndocker run --rm -it \\\n  -v a:/b\n  img\n", "run.sh")
    with pytest.raises(UsageError, match=r"^run.sh:1: --shm-size: cannot read 'lots'"):
        shell.probe("docker run --shm-size=lots img", "run.sh")
    with pytest.raises(UsageError, match="nested deeper than 16"):
        shell.probe("echo " + "$(" * 40 + ")" * 40, "run.sh")


def test_unclosed_quotes_and_parens_end_at_the_file_and_take_linear_time():
    assert shell.probe("docker run --shm-size=1g img 'unclosed\n", "a.sh")[0].facts.shm.size_bytes == GiB
    assert shell.probe("x=$(\n" * 10 + "docker run img", "a.sh")  # unclosed: read to the end
    assert shell.probe("docker run img " + "a " * 4000, "a.sh")  # a long command's words
    with pytest.raises(UsageError, match="more than 4096 arguments"):
        shell.probe("docker run img " + "a " * 100_000, "a.sh")


def test_a_folder_reads_scripts_by_name_and_shebang_unless_told_not(tmp_path, capsys):
    (tmp_path / "start").write_text("#!/usr/bin/env bash\ndocker run --gpus all pytorch/pytorch python train.py\n")
    (tmp_path / "notes.txt").write_text("docker run --gpus all pytorch/pytorch\n")  # no script
    (tmp_path / "tools.sh").write_text("echo hi\n")  # a script with no run command: unsaid in a folder
    (tmp_path / "Makefile").write_text("run:\n\tdocker run --shm-size=2g pytorch/pytorch python train.py\n")
    assert main(["lint", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"{tmp_path}/start:2" in out and f"{tmp_path}/Makefile:2" in out and "tools.sh" not in out
    assert "notes.txt" not in out
    (tmp_path / "c.yml").write_text("services:\n  web:\n    image: nginx\n")
    assert main(["lint", str(tmp_path), "--no-scripts"]) == 0
    out = capsys.readouterr().out
    assert "1 service or workload in 1 file" in out and "start" not in out
    assert main(["lint", str(tmp_path / "tools.sh")]) == 2  # named alone: said why
    assert "tools.sh: a script with no docker, podman or nerdctl run command" in capsys.readouterr().err


def test_the_real_scripts_read_as_their_engines_run_them():
    [tgi] = shell.probe((SCRIPTS / "arc-agi-launch_tgi.sh").read_text(), "launch_tgi.sh")
    assert tgi.facts.server is not None and tgi.facts.server.tensor_parallel == 2 and tgi.facts.gpus == "all"
    [run] = shell.probe((SCRIPTS / "napoleonzero-training-run.sh").read_text(), "run.sh")
    assert run.facts.ipc.mode == "host" and run.facts.target.line == 4  # the commented --shm-size is none
    found = shell.probe((SCRIPTS / "summercamp2022" / "Makefile").read_text(), "Makefile")
    assert [d.facts.shm.size_bytes for d in found] == [64 * MiB, 64 * MiB, 8 * GiB, 8 * GiB]
    assert "loads-nothing" in found[0].facts.flags  # nvidia-smi


GO_UNITS = json.loads((DATA / "go-units" / "ram-in-bytes.json").read_text())


@pytest.mark.parametrize(
    "text, expected",
    GO_UNITS["ram_in_bytes"] + GO_UNITS["from_human_size_spellings"] + [["2Gi", None], ["1e3m", 1000 * MiB]],
    ids=repr,
)
@pytest.mark.parametrize("command", ["docker", "podman"])
def test_a_run_commands_shm_size_is_read_as_the_engines_cli_reads_it(tmp_path, capsys, command, text, expected):
    """docker/cli's --shm-size is an opts.MemBytes, whose Set is go-units' RAMInBytes (Podman's and nerdctl's
    alike): go-units' own cases (tests/data/go-units) through lint, as a user runs it. 0 is the engine's default
    (Podman: no limit); what RAMInBytes refuses is one line, exit 2 (`2Gi`, ` 32 `: parse_size took both); past
    1 PiB is refused as no machine's."""
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/sh\n{command} run --shm-size={shlex.quote(text)} pytorch/pytorch python train.py\n")
    code = main(["lint", str(script), "--format", "json"])
    out, err = capsys.readouterr()
    if expected is None or expected > 2**50:
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"shmdoctor: error: {script}:2: --shm-size: "), err
        return
    assert code in (0, 1), err
    shm = json.loads(out)["reports"][0]["shm"]
    default = None if command == "podman" else 64 * MiB
    assert shm["size_bytes"] == (expected or default)
