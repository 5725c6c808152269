"""--fix of a Podman Quadlet unit (podman-systemd.unit(5)): ShmSize= in the [Container] section, set where the unit
has it, else a line after the section's last one (before its blank lines and the next section); a unit whose last
line has no newline gets one. Expected units written out by hand."""

from __future__ import annotations

import pytest

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "[Unit]\nDescription=x\n\n[Container]\nImage=docker.io/pytorch/pytorch\nPodmanArgs=--gpus all\n\n\n"
            "[Install]\nWantedBy=default.target\n",
            "[Unit]\nDescription=x\n\n[Container]\nImage=docker.io/pytorch/pytorch\nPodmanArgs=--gpus all\n"
            "ShmSize=1536m\n\n\n[Install]\nWantedBy=default.target\n",
        ),
        (
            "[Container]\nImage=docker.io/pytorch/pytorch\nShmSize=64m\n# the loader's\nVolume=/data:/data\n",
            "[Container]\nImage=docker.io/pytorch/pytorch\nShmSize=1536m\n# the loader's\nVolume=/data:/data\n",
        ),
        (
            "[Container]\nImage=docker.io/pytorch/pytorch",
            "[Container]\nImage=docker.io/pytorch/pytorch\nShmSize=1536m\n",
        ),
    ],
)
def test_shmsize_is_set_in_the_container_section(tmp_path, text, expected):
    path = tmp_path / "train.container"
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert path.read_text() == expected
    assert main(["lint", str(path), "--fix", *LOADER]) == 0 and path.read_text() == expected  # idempotent
