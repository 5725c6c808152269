"""--textfile: one scrape written atomically for node_exporter's textfile collector, valid for promtool."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.helpers import REPO
from tests.integration.prometheus.exporting import Containers, binary, by_container, df_used, samples

pytestmark = pytest.mark.docker
MiB = 2**20


def test_textfile_holds_the_containers_and_passes_promtool(images, tmp_path):
    with Containers() as c:
        name, _ = c.start(
            "textfile", "--shm-size=72m", cmd=("sh", "-c", "dd if=/dev/zero of=/dev/shm/f bs=1M count=5; sleep 600")
        )
        for _ in range(50):
            if df_used(name) >= 5 * MiB:
                break
            time.sleep(0.1)
        proc = subprocess.run(
            [sys.executable, "-m", "shmdoctor", "exporter", "--textfile", str(tmp_path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert os.listdir(tmp_path) == ["shmdoctor.prom"]  # the temporary was renamed over it, nothing left beside
        text = (tmp_path / "shmdoctor.prom").read_text()
        assert by_container(text, "shmdoctor_shm_size_bytes")[name] == 72 * MiB
        assert by_container(text, "shmdoctor_shm_used_bytes")[name] == df_used(name)
        assert samples(text)["shmdoctor_engine_up"] == [({}, 1)]
        lint = subprocess.run([binary("promtool"), "check", "metrics"], input=text, capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr


def test_textfile_with_the_engine_away_still_writes_its_errors_and_exits_3(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "shmdoctor", "exporter", "--textfile", str(tmp_path), "--timeout", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"},
    )
    assert proc.returncode == 3
    [line] = proc.stderr.splitlines()[-1:]
    assert line.startswith("shmdoctor: error: ") and "no-engine.sock" in line
    series = samples((tmp_path / "shmdoctor.prom").read_text())
    assert series["shmdoctor_engine_up"] == [({}, 0)]
    assert series["shmdoctor_scrape_errors_total"] == [({}, 1)]
    assert "Traceback" not in proc.stderr
