"""bench must not hurt the machine: a batch or a config that cannot fit in memory is refused before anything runs,
as a user runs it (issue 11: --batch-size 1099511627776 --sample-bytes 1g took 23 GB and set off the host's OOM
killer)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO


@pytest.mark.parametrize(
    "args, says",
    [
        (["--batch-size", "100000", "--sample-bytes", "1g", "--num-workers", "0"], "one batch is "),
        (["--batch-size", "4", "--sample-bytes", "1g", "--num-workers", "0,64"], "num_workers=64, prefetch_factor=2"),
    ],
)
def test_bench_refuses_before_running_anything(tmp_path, args, says):
    proc = subprocess.run(
        [sys.executable, "-m", "shmdoctor", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("shmdoctor: error: ") and says in line and "nothing was run" in line
    assert os.listdir(tmp_path) == []  # the zygote that started beside it is gone, with its folder
