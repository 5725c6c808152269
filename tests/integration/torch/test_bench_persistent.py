"""persistent_workers in bench's grid, for real on this machine's CPU: the next epoch's start is timed for both, and
an epoch cut short leaves its batches in flight in /dev/shm with kept workers only (issue 16)."""

import json

import pytest

from shmdoctor.render.bench import render_text
from shmdoctor.sizes import MiB
from tests.helpers import run_cli, validate

pytestmark = pytest.mark.usefixtures("torch_module")


def test_kept_workers_hold_the_cut_short_epochs_batches_in_shm_until_the_next_epoch():
    proc = run_cli(
        *("bench", "--sample-bytes", "1MiB", "--item-latency", "0.002", "--batch-size", "16", "--step-time", "0.02"),
        *("--num-workers", "2", "--persistent-workers", "true,false", "--format", "json"),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    validate(doc)
    kept, forked = sorted(doc["results"], key=lambda r: not r["persistent_workers"])
    assert kept["persistent_workers"] and not forked["persistent_workers"]
    assert kept["status"] == forked["status"] == "ok"
    batch = kept["batch_bytes"]  # 16 MiB: 2 workers x prefetch 2 = 4 batches asked for when the loop broke
    assert batch == 16 * MiB
    assert 3 * batch <= kept["between_epochs_shm_bytes"] <= kept["predicted_shm_bytes"]
    assert forked["between_epochs_shm_bytes"] < batch  # the iterator went, and its batches with it
    assert kept["next_epoch_start_seconds"] > 0 and forked["next_epoch_start_seconds"] > 0
    text = render_text(doc)
    assert "persistent_workers=true at num_workers=2: the next epoch starts in" in text
    assert "of /dev/shm held until the next epoch starts" in text
