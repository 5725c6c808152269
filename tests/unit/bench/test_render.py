"""The bench's text and chart, from the JSON the H200 run produced (docs/gpu-bench/): a captured real input."""

import json
import subprocess
import sys

from shmdoctor.bench.model import Config, Result
from shmdoctor.render.bench import render_text
from tests.helpers import REPO

GPU_RUN = REPO / "docs" / "gpu-bench" / "bench-seed-workers.json"


def test_text_from_the_gpu_run_leads_with_the_recommendation(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    doc = json.loads(GPU_RUN.read_text())
    lines = render_text(doc).splitlines()
    assert lines[0].startswith("RECOMMEND  num_workers=3, prefetch_factor=2, pin_memory=true")
    header = next(line for line in lines if line.startswith("WORKERS"))
    assert header.split()[:4] == ["WORKERS", "PREFETCH", "PIN", "NB"] and "H2D" in header
    rows = [line.split() for line in lines if line.split()[:1] and line.split()[0].isdigit()]
    assert len(rows) == len(doc["results"]) == 20 and all(row[4] == "ok" for row in rows)


def test_a_config_read_back_from_its_dict_labels_the_same():
    """The text is rendered from the JSON document, its labels by Config.label: each dict reads back to its Config."""
    for config in (Config(0, None, False, False), Config(3, 2, True, False)):
        d = Result(config, "ok", predicted_shm_bytes=1).to_dict(batch_size=8)
        assert Config.of(d) == config


def test_plot_without_matplotlib_says_what_it_needs(tmp_path):
    """A Python that cannot import matplotlib (a None entry in sys.modules): one line, exit 2, no file."""
    out = tmp_path / "sweep.png"
    code = (
        "import sys; sys.modules['matplotlib'] = None; from shmdoctor.cli import main; "
        f"sys.exit(main(['bench', '--sample-bytes', '64k', '--batch-size', '2', '--plot', {str(out)!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "--plot needs matplotlib" in proc.stderr and not out.exists()
