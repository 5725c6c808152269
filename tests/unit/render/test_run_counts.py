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


def test_a_file_left_under_two_names_is_counted_twice_and_its_pages_once():
    """Two names of one file (a hard link: one inode, its pages once, as statvfs counts them) are two leftovers of
    the size of one; so are two names of a file of no known kind."""
    o, _, _ = outcome()
    torch = (Entry("torch_7_1_0", 42, 8192, "PyTorch", links=2), Entry("torch_7_1_1", 42, 8192, "PyTorch", links=2))
    files = (File("a.tmp", 43, 4096, links=2), File("b.tmp", 43, 4096, links=2), File("c.tmp", 44, 4096))
    o = replace(o, leftovers=torch, left_files=files)
    doc = validate(json.loads(render(o, "json")))
    assert (doc["leftovers"]["count"], doc["leftovers"]["bytes"]) == (2, 8192)
    assert (doc["left_files"]["count"], doc["left_files"]["bytes"]) == (3, 8192)
    text = render(o, "text")
    assert "left 2 segment(s) in /dev/shm, 8 KiB" in text and "3 other file(s) appeared" in text
    assert "still there, 8 KiB" in text
