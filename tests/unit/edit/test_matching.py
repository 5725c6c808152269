"""The near-linear line matcher under --fix and --diff, against difflib on any two texts (Hypothesis): the lines it
matches are equal and in order, its opcodes rebuild the second text from the first, and where it matches what
SequenceMatcher matches its unified diff is difflib's, byte for byte."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from shmdoctor.edit.matching import Matcher, blocks, unified_diff

LINES = st.lists(st.sampled_from(["a:\n", "  b: 1\n", "  c: 2\n", "# x\n", "\n", "d:\n", "  - e\n"]), max_size=40)


@given(LINES, LINES)
def test_matched_lines_are_equal_in_order_and_the_opcodes_rebuild_the_second(a, b):
    found = blocks(a, b)
    assert found[-1] == (len(a), len(b), 0)
    for (i, j, n), (i2, j2, _) in zip(found, found[1:]):
        assert a[i : i + n] == b[j : j + n] and n > 0 and i + n <= i2 and j + n <= j2
    rebuilt = []
    for tag, i1, i2, j1, j2 in Matcher(a, b).get_opcodes():
        rebuilt += a[i1:i2] if tag == "equal" else b[j1:j2]
    assert rebuilt == b


@given(LINES, LINES)
def test_where_it_matches_as_difflib_its_diff_is_difflibs(a, b):
    if blocks(a, b) == difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        assert list(unified_diff(a, b, "a/f", "b/f")) == list(difflib.unified_diff(a, b, "a/f", "b/f"))


def test_a_thousand_alike_blocks_each_changed_are_matched_whole():
    """The shape that was quadratic: many services alike but for their name, each given one more line."""
    a = [line for i in range(1000) for line in (f"  s{i}:\n", "    image: x\n", "    env: {A: b}\n")]
    b = [line for i in range(1000) for line in (f"  s{i}:\n", "    image: x\n", "    shm: 1g\n", "    env: {A: b}\n")]
    assert sum(n for _, _, n in blocks(a, b)) == len(a)
