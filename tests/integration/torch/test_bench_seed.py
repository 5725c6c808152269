"""The seed's experiment, for real on this machine's CPU: bench recommends 3 or 4 workers (issue 4).
Its time against a seed epoch is a figure, printed by benchmarks/bench_vs_seed_epoch.py, not a timed test."""

import json

from tests.helpers import run_cli


def test_the_seed_experiment_recommends_3_or_4_workers(torch_module):
    proc = run_cli(
        "bench",
        "--sample-bytes",
        "1MiB",
        "--item-latency",
        "0.005",
        "--batch-size",
        "100",
        "--step-time",
        "0.2",
        "--num-workers",
        "0,1,2,3,4",
        "--exhaustive",
        "--format",
        "json",
        timeout=300,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and [r["status"] for r in doc["results"]] == ["ok"] * 5
    assert doc["recommendation"]["num_workers"] in (3, 4)
    by_workers = {r["num_workers"]: r["batch_seconds"] for r in doc["results"]}
    assert by_workers[0] > by_workers[2] > by_workers[3]  # the loop waits for data until 3 workers hide loading


def test_the_seed_experiment_searched_over_0_to_8_finds_the_knee_running_fewer_configs():
    proc = run_cli(
        *("bench", "--sample-bytes", "1MiB", "--item-latency", "0.005", "--batch-size", "100", "--step-time", "0.2"),
        *("--num-workers", "0..8", "--format", "json"),
        timeout=300,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["num_workers"] for r in doc["results"]) == list(range(9))  # every config, run or skipped
    ran = [r for r in doc["results"] if r["status"] == "ok"]
    skipped = [r for r in doc["results"] if r["status"] == "skipped"]
    assert len(ran) + len(skipped) == 9 and len(ran) <= 5, [(r["num_workers"], r["status"]) for r in doc["results"]]
    assert all(r["message"].startswith("searched: num_workers=") for r in skipped)
    assert doc["recommendation"]["num_workers"] in (3, 4)
    assert f"skipped num_workers={','.join(str(r['num_workers']) for r in skipped)}" in bench_text(doc)


def bench_text(doc):
    from shmdoctor.render.bench import render_text

    return render_text(doc)
