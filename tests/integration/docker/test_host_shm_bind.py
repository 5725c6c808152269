"""What a bind of the host's /dev/shm shares, as its caveat says: the files there, not the IPC namespace."""

from __future__ import annotations

import os
import subprocess

from shmdoctor.fixes import HOST_SHM_CAVEAT
from shmdoctor.probe.local import HOST_IPC_INODE
from tests.helpers import BUSYBOX, WAIT, unique_name


def test_a_bind_of_dev_shm_shares_its_files_not_the_ipc_namespace(images):
    name = unique_name("shm-file")
    path = f"/dev/shm/{name}"
    with open(path, "w") as f:
        f.write("from the host\n")
    try:
        proc = subprocess.run(
            [
                "docker",
                "run",
                "--rm",
                "--network",
                "none",
                "-v",
                "/dev/shm:/dev/shm",
                BUSYBOX,
                "sh",
                "-c",
                f"stat -L -c %i /proc/self/ns/ipc; cat {path}",
            ],
            capture_output=True,
            text=True,
            timeout=WAIT * 4,
        )
    finally:
        os.unlink(path)
    inode, seen = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert seen == "from the host"  # the host's /dev/shm files are shared ...
    assert int(inode) != HOST_IPC_INODE  # ... in an IPC namespace of its own
    assert "not its IPC namespace" in HOST_SHM_CAVEAT and "System V segments" in HOST_SHM_CAVEAT
