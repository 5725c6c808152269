"""lint --fix on a real script, then the script run for real: a `docker` first on PATH hands its command line to
the engine with the image swapped for busybox (its command `df /dev/shm`) and no GPUs, so the /dev/shm the
container gets is what the fixed line asks for."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from shmdoctor.cli import main
from tests.helpers import BUSYBOX, DATA, unique_name

SCRIPT = DATA / "real" / "scripts" / "arc-agi-launch_tgi.sh"  # TGI at --num-shard 2 with --shm-size 1g
IMAGE = "ghcr.io/huggingface/text-generation-inference:3.0.1"
LOADER = ["--batch-size", "64", "--num-workers", "8", "--sample-bytes", "2MiB"]
# The engine's own docker, called with the script's arguments less what needs a GPU or a port, the image swapped
WRAPPER = """#!/bin/bash
args=()
while [ $# -gt 0 ]; do
  a=$1; shift
  case "$a" in
    --gpus|-p) shift ;;
    --gpus=*|--runtime=nvidia|-d|-it) ;;
    "$SWAP_IMAGE") args+=(--name "$SWAP_NAME" --network none "$SWAP_BUSYBOX" df -Pk /dev/shm); break ;;
    *) args+=("$a") ;;
  esac
done
exec "$REAL_DOCKER" "${args[@]}"
"""


def test_the_fixed_script_gives_its_container_the_size(images, tmp_path, capsys):
    script = tmp_path / "launch_tgi.sh"
    shutil.copy(SCRIPT, script)
    assert main(["lint", str(script), "--fix", *LOADER]) == 1
    capsys.readouterr()
    fixed = script.read_text()
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert main(["lint", str(script), "--fix", *LOADER]) == 0 and script.read_text() == fixed  # nothing more
    capsys.readouterr()
    assert main(["lint", str(script), "--format", "json", *LOADER]) == 0
    [report] = json.loads(capsys.readouterr().out)["reports"]
    size = report["shm"]["size_bytes"]
    written = re.search(r"--shm-size (\S+)", fixed)
    assert size > 2**30 and written and fixed == SCRIPT.read_text().replace("--shm-size 1g", written.group(0))

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(WRAPPER)
    (bin_dir / "docker").chmod(0o755)
    name = unique_name("tgi-script")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "REAL_DOCKER": shutil.which("docker") or "docker",
        "SWAP_IMAGE": IMAGE,
        "SWAP_NAME": name,
        "SWAP_BUSYBOX": BUSYBOX,
        "HF_HOME": str(tmp_path),  # the script's -v $HF_HOME:/data
    }
    try:
        run = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=120)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert int(run.stdout.splitlines()[1].split()[1]) * 1024 == size  # df inside: the size the fix wrote
