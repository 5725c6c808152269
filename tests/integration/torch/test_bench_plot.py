"""bench --plot on a real sweep (torch, on this machine): a PNG is written."""

from tests.helpers import missing, run_cli


def test_plot_writes_a_png(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        missing("matplotlib is not installed (shmdoctor[plot]; scripts/test.sh installs it)")
    out = tmp_path / "sweep.png"
    proc = run_cli(
        "bench",
        "--sample-bytes",
        "64k",
        "--batch-size",
        "2",
        "--num-workers",
        "0,1",
        "--batches",
        "3",
        "--plot",
        str(out),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
