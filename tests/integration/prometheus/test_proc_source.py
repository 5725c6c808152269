"""--source proc on containers of the real engine, the engine's socket hidden: what a containerd or CRI-O node
gives the exporter. One target per distinct /dev/shm, named from the cgroup path, the IPC mode from the namespace
inode, use equal to `df` inside; a container on the host's /dev/shm is the host's target."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.helpers import REPO, missing
from tests.integration.prometheus.exporting import Containers, df_used, samples

pytestmark = pytest.mark.docker
MiB = 2**20
FILL = ("sh", "-c", "dd if=/dev/zero of=/dev/shm/f bs=1M count=7 2>/dev/null; sleep 600")
# The exporter in a mount namespace of its own where /run (so /var/run/docker.sock) is an empty tmpfs: no engine
HIDDEN = 'mount -t tmpfs none /run && exec "$0" "$@"'


def test_containers_found_from_proc_alone_with_the_socket_hidden(images, tmp_path):
    if not shutil.which("unshare"):
        missing("unshare (util-linux) is not installed")
    with Containers() as c:
        alone, alone_id = c.start("proc-alone", "--shm-size=96m", "--memory=300m", cmd=FILL)
        _, owner_id = c.start("proc-owner", "--ipc=shareable", "--shm-size=80m")
        _, joiner_id = c.start("proc-joiner", f"--ipc=container:{owner_id}")
        _, host_id = c.start("proc-hostipc", "--ipc=host")
        while df_used(alone) < 7 * MiB:  # its dd runs as it starts
            time.sleep(0.1)
        env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
        proc = subprocess.run(
            [
                "unshare",
                "-m",
                "sh",
                "-c",
                HIDDEN,
                sys.executable,
                "-m",
                "shmdoctor",
                "exporter",
                "--textfile",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert "from /proc" in proc.stderr  # --source auto found no socket
        series = samples((tmp_path / "shmdoctor.prom").read_text())
        assert "shmdoctor_engine_up" not in series

        def target(metric: str) -> dict[str, tuple[dict, float]]:
            return {labels["container_id"]: (labels, value) for labels, value in series.get(metric, [])}

        sizes = target("shmdoctor_shm_size_bytes")
        labels, size = sizes[alone_id]
        assert labels == {
            "container": alone_id[:12],
            "container_id": alone_id,
            "image": "",
            "ipc_mode": "private",
            "source": "docker-shm",
        }
        assert size == 96 * MiB
        assert target("shmdoctor_shm_used_bytes")[alone_id][1] == df_used(alone)
        assert target("shmdoctor_memory_limit_bytes")[alone_id][1] == 300 * MiB

        shared = [cid for cid in (owner_id, joiner_id) if cid in sizes]
        assert len(shared) == 1  # one /dev/shm, one target
        labels, size = sizes[shared[0]]
        assert size == 80 * MiB and labels["ipc_mode"] == "shareable"

        assert host_id not in sizes  # --ipc=host: the host's /dev/shm, which is the host's target
        host_labels, _ = sizes[""]
        assert host_labels["source"] == "system" and host_labels["ipc_mode"] == "host"
