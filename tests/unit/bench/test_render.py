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


def with_pin_device(ignored: bool | None) -> tuple[dict, dict]:
    """The GPU run, its recommended config run again passing pin_memory_device: a row of the shape a sweep writes;
    (the document, the row without it)."""
    doc = json.loads(GPU_RUN.read_text())
    bare = next(r for r in doc["results"] if Config.of(r) == Config.of(doc["recommendation"]))
    given = {**bare, "pin_memory_device": "cuda:0", "pin_memory_device_ignored": ignored, "h2d_seconds": 0.00533}
    doc["results"].append(given)
    return doc, bare


def test_pin_memory_device_has_its_column_and_its_line_only_where_it_was_swept(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    plain = render_text(json.loads(GPU_RUN.read_text()))
    assert "PIN DEV" not in plain and "pin_memory_device" not in plain
    doc, bare = with_pin_device(ignored=True)
    lines = render_text(doc).splitlines()
    header = next(line for line in lines if line.startswith("WORKERS"))
    assert header.split()[:6] == ["WORKERS", "PREFETCH", "PIN", "NB", "PIN", "DEV"]
    rows = [line.split() for line in lines if line.split()[:1] and line.split()[0].isdigit()]
    assert [row[4] for row in rows].count("cuda:0") == 1 and [row[4] for row in rows].count("-") == 20
    said = [i for i, line in enumerate(lines) if line.strip().startswith("pin_memory_device=")]
    assert len(said) == 1 and said[0] < lines.index(header)
    t, h2d = bare["batch_seconds"], bare["h2d_seconds"] * 1000
    assert lines[said[0]].strip() == (
        "pin_memory_device=cuda:0 at num_workers=3, prefetch_factor=2, pin_memory=true, non_blocking=false: "
        f"{t:.3f} s a batch and 5.33 ms H2D, against {t:.3f} s and {h2d:.2f} ms without it; torch 2.11.0+cu130 "
        "ignores it (deprecated; pinned memory goes to the current accelerator): leave it out"
    )


def test_a_torch_that_honours_pin_memory_device_is_not_told_to_leave_it_out(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    said = [x for x in render_text(with_pin_device(ignored=False)[0]).splitlines() if "pin_memory_device=" in x]
    assert len(said) == 1 and "without it" in said[0] and "ignores" not in said[0]


def test_persistent_workers_lines_from_the_gpu_run_say_the_next_epochs_start_and_what_is_held(monkeypatch):
    """docs/gpu-bench/bench-persistent.json: 3 and 4 workers, pinned, persistent_workers true and false, on the H200."""
    monkeypatch.setenv("NO_COLOR", "1")
    doc = json.loads((REPO / "docs" / "gpu-bench" / "bench-persistent.json").read_text())
    kept = {r["num_workers"]: r for r in doc["results"] if r["persistent_workers"]}
    lines = [line.strip() for line in render_text(doc).splitlines() if "persistent_workers=true at" in line]
    assert len(lines) == len(kept) == 2
    for line, (workers, r) in zip(lines, sorted(kept.items())):
        assert line.startswith(f"persistent_workers=true at num_workers={workers}: the next epoch starts in ")
        assert f"{r['next_epoch_start_seconds']:.2f} s instead of" in line
        assert "pin_memory's thread has moved them on, to pinned host memory" in line  # pinned: not in /dev/shm
    saved = {w: r["next_epoch_start_seconds"] for w, r in kept.items()}
    twins = {r["num_workers"]: r["next_epoch_start_seconds"] for r in doc["results"] if not r["persistent_workers"]}
    for line, w in zip(lines, sorted(kept)):
        assert ("nothing saved: it does not pay here" in line) == (twins[w] <= saved[w])


def test_configs_within_noise_of_the_recommendation_are_said_to_be(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    doc = json.loads(GPU_RUN.read_text())
    assert "within noise" not in render_text(doc)  # saved before it was said: nothing
    rec = doc["recommendation"]
    twin = next(r for r in doc["results"] if Config.of(r) == Config(3, 2, True, True))
    rec["within_noise"] = [twin]
    lines = render_text(doc).splitlines()
    assert lines[0].startswith("RECOMMEND  num_workers=3, prefetch_factor=2, pin_memory=true, non_blocking=false")
    assert lines[2] == (
        "           within noise of it (5%), as good: num_workers=3, prefetch_factor=2, pin_memory=true, "
        "non_blocking=true: 0.203 s; which of them is fastest can change from one run to the next"
    )
