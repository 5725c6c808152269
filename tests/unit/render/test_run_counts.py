"""run's document against its own lists, past the cap on names: `leftovers` and `left_files` count and add up every
segment and file, name the first LEFTOVER_NAMES of them in order (docs/json.md: "their names (the first ones)"),
and the text says the same count and total. The outcome is run's own (session.bare, as after a fault of ours: the
command, its exit and the facts) with leftovers as removal.left_behind lists them."""

from __future__ import annotations

import json
from dataclasses import replace

from shmdoctor.render import render
from shmdoctor.render.run import LEFTOVER_NAMES
from shmdoctor.shm.segments import Entry, File
from shmdoctor.wrap.child import Ended
from shmdoctor.wrap.session import bare
from tests.helpers import place, validate

COUNT = 250  # past the cap on names


def outcome():
    leftovers = tuple(Entry(f"torch_{1000 + i}_{i}_0", 10_000 + i, 4096 * (i % 7), "PyTorch") for i in range(COUNT))
    others = tuple(File(f"job-{i:04d}.tmp", 20_000 + i, 8192) for i in range(COUNT + 1))
    done = bare("python train.py", place(None), Ended(135, 2.0, (), 42, None), 5000, RuntimeError("x"))
    return replace(done, leftovers=leftovers, clean="shmdoctor clean --yes", left_files=others), leftovers, others


def test_counts_and_bytes_are_of_every_entry_and_names_the_first_ones():
    o, leftovers, others = outcome()
    doc = validate(json.loads(render(o, "json")))
    assert LEFTOVER_NAMES == 100 and COUNT > LEFTOVER_NAMES
    assert doc["leftovers"]["count"] == COUNT and doc["left_files"]["count"] == COUNT + 1
    assert doc["leftovers"]["bytes"] == 4096 * sum(i % 7 for i in range(COUNT))
    assert doc["left_files"]["bytes"] == 8192 * (COUNT + 1)
    assert doc["leftovers"]["names"] == [f"torch_{1000 + i}_{i}_0" for i in range(LEFTOVER_NAMES)]
    assert doc["left_files"]["names"] == [f"job-{i:04d}.tmp" for i in range(LEFTOVER_NAMES)]


def test_the_text_says_the_same_count_and_total():
    o, _, _ = outcome()
    text = render(o, "text")
    assert f"left {COUNT} segment(s) in /dev/shm, " in text and f"{COUNT + 1} other file(s) appeared" in text
    assert "torch_1000_0_0, torch_1001_1_0, torch_1002_2_0, ..." in text
