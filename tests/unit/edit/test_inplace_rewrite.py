"""edit/inplace.rewrite on its own: each change it writes in place, the text expected written out by hand from
YAML's block rules and the module's contract (scalars replaced in their own quoting, keys added after a mapping's last
key or before its first, items after a list's last, in the file's own indents, after the comments that belong to the
collection), and each change it leaves to the round trip (None)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shmdoctor.edit import inplace

Docs = list[tuple[int, Any]]


def rewrite(text: str, change: Callable[[Any], None]) -> str | None:
    def on_first(docs: Docs) -> None:
        change(docs[0][1])

    return inplace.rewrite(text, "compose.yaml", on_first)


def _set(path: tuple, value: Any) -> Callable[[Any], None]:
    def change(body: Any) -> None:
        for key in path[:-1]:
            body = body[key]
        body[path[-1]] = value

    return change


def _append(path: tuple, *values: Any) -> Callable[[Any], None]:
    def change(body: Any) -> None:
        for key in path:
            body = body[key]
        body.extend(values)

    return change


WRITTEN = [
    # scalars, each in its own quoting
    ("a: 1\nb: x\n", _set(("a",), 2), "a: 2\nb: x\n"),
    ("a: x\n", _set(("a",), "y z"), "a: y z\n"),
    ("a: x\n", _set(("a",), "1"), "a: '1'\n"),  # plain 1 is an int: quoted
    ("a: x\n", _set(("a",), "it's: #"), "a: 'it''s: #'\n"),
    ("a: 'x'\n", _set(("a",), "it's"), "a: 'it''s'\n"),
    ("a: 'it''s'\n", _set(("a",), "y"), "a: 'y'\n"),
    ('a: "x"\n', _set(("a",), 'say "y"'), 'a: "say \\"y\\""\n'),
    ("a: x  # why\n", _set(("a",), "y"), "a: y  # why\n"),
    ("l: [a, b]\n", _set(("l", 1), "c"), "l: [a, c]\n"),
    ("l:\n  - a\n  - b\n", _set(("l", 0), "c"), "l:\n  - c\n  - b\n"),
    # items after a list's last, at its dash's column
    ("a:\n  - x\n  - y\nb: 1\n", _append(("a",), "z"), "a:\n  - x\n  - y\n  - z\nb: 1\n"),
    ("a:\n- x\nb: 1\n", _append(("a",), "z", 3), "a:\n- x\n- z\n- 3\nb: 1\n"),
    ("a:\n  - x\n", _append(("a",), "1"), "a:\n  - x\n  - '1'\n"),
    (
        "a:\n  - name: x\n    v: 1\n",
        _append(("a",), {"name": "y", "v": 2}),
        "a:\n  - name: x\n    v: 1\n  - name: y\n    v: 2\n",
    ),
    # keys after a mapping's last key, a mapping or a list below one in the file's indents
    ("s:\n  image: p\n", _set(("s", "shm_size"), "1g"), "s:\n  image: p\n  shm_size: 1g\n"),
    ("a:\n    b: 1\n", _set(("a", "c"), {"d": 1}), "a:\n    b: 1\n    c:\n        d: 1\n"),
    ("a:\n  - x\nb:\n  c: 1\n", _set(("b", "l"), ["y"]), "a:\n  - x\nb:\n  c: 1\n  l:\n    - y\n"),
    ("a:\n- x\nb:\n  c: 1\n", _set(("b", "l"), ["y"]), "a:\n- x\nb:\n  c: 1\n  l:\n  - y\n"),
    ("a:\n  b: 1\n", _set(("a", "c"), [{"d": 1, "e": 2}]), "a:\n  b: 1\n  c:\n  - d: 1\n    e: 2\n"),
    # after the comments that belong to it; before a blank line or a comment of what follows
    ("a:\n  b: 1\n  # note\nc: 2\n", _set(("a", "d"), 3), "a:\n  b: 1\n  # note\n  d: 3\nc: 2\n"),
    ("a:\n  b: 1\n# about c\nc: 2\n", _set(("a", "d"), 3), "a:\n  b: 1\n  d: 3\n# about c\nc: 2\n"),
    ("a:\n  b: 1\n\nc: 2\n", _set(("a", "d"), 3), "a:\n  b: 1\n  d: 3\n\nc: 2\n"),
    ("a:\n  b: 1\n  # note\n\nc: 2\n", _set(("a", "d"), 3), "a:\n  b: 1\n  # note\n  d: 3\n\nc: 2\n"),
    ("a:\n  b: 1", _set(("a", "d"), 3), "a:\n  b: 1\n  d: 3"),  # no newline at the end
    ('a: ""\n', _set(("a",), "x"), 'a: "x"\n'),  # an empty string in double quotes
    ("a: x\ntrue: 1\n", _set(("a",), "y"), "a: y\ntrue: 1\n"),  # a key that is not a string, not a merge
    (  # a line that changes above the last: the comment below the last stays with it
        "a:\n  b: 1\n  c: 2\n  # note\nz: 0\n",
        lambda b: b["a"].update(b=5, d=3),
        "a:\n  b: 5\n  c: 2\n  # note\n  d: 3\nz: 0\n",
    ),
    (  # a key added to a list's last item and an item after it: the item's key first, as a dump writes them
        "l:\n  - a: 1\nz: 0\n",
        lambda b: (b["l"][0].update(b=2), b["l"].append("w")),
        "l:\n  - a: 1\n    b: 2\n  - w\nz: 0\n",
    ),
    # a run's first line is its deepest: a comment less indented than it belongs to what follows
    (
        "a:\n  b:\n    c: 1\n  # about a\nz: 0\n",
        lambda b: (b["a"].update(e=3), b["a"]["b"].update(d=2)),
        "a:\n  b:\n    c: 1\n    d: 2\n  e: 3\n  # about a\nz: 0\n",
    ),
    (  # a list with its dash at its key's column is deeper than the key, not more indented
        "a:\n  b: 1\n  l:\n  - x\nz: 0\n",
        lambda b: (b["a"].update(c=2), b["a"]["l"].append("y")),
        "a:\n  b: 1\n  l:\n  - x\n  - y\n  c: 2\nz: 0\n",
    ),
    ("\n  - x\n", lambda b: b.append("y"), "\n  - x\n  - y\n"),  # the first line's break at 0
    ("l:\n  - x\n", _append(("l",), "y"), "l:\n  - x\n  - y\n"),  # the break before the item at 2
    ("ll:\n  - x\n", _append(("ll",), "y"), "ll:\n  - x\n  - y\n"),  # at 3
    ("a:\r\n  b: 1\r\nc: 2\r\n", _set(("a", "d"), 3), "a:\r\n  b: 1\n  d: 3\r\nc: 2\r\n"),  # before its \r
]


@pytest.mark.parametrize(("text", "change", "expected"), WRITTEN)
def test_written_in_place(text: str, change: Callable[[Any], None], expected: str) -> None:
    assert rewrite(text, change) == expected


def test_keys_added_before_the_first_at_its_column() -> None:
    def first(body: Any) -> None:
        old = body["s"]
        body["s"] = type(old)(k=1)  # the parse's own mapping type, the new key first
        body["s"].update(old)

    assert rewrite("s:\n  image: p\n", first) == "s:\n  k: 1\n  image: p\n"
    assert rewrite("ss:\n  image: p\n", _first(("ss",), "k")) == "ss:\n  k: 1\n  image: p\n"  # its break at 3
    assert rewrite("s:\n  image: p\n  b: 1\n", _first(("s",), "z")) == "s:\n  z: 1\n  image: p\n  b: 1\n"
    assert rewrite("s:\n  image: p\n  b: 1\n", _first(("s",), "a")) == "s:\n  a: 1\n  image: p\n  b: 1\n"
    assert rewrite("\n  a: 1\n  b: 2\n", _first((), "k")) == "\n  k: 1\n  a: 1\n  b: 2\n"  # a break at 0
    assert rewrite("s:\n  a: 1\n  c: 3\n", _middle) is None  # neither after the last nor before the first

    def first_of_item(body: Any) -> None:
        old = body["l"][0]
        body["l"][0] = type(old)(k=1)
        body["l"][0].update(old)

    assert rewrite("l:\n  - name: x\n", first_of_item) is None  # the first key shares its line
    assert rewrite("l:\n  -\n    name: x\n", first_of_item) == "l:\n  -\n    k: 1\n    name: x\n"


def _first(path: tuple, key: str) -> Callable[[Any], None]:
    def change(body: Any) -> None:
        parent, last = None, body
        for k in path:
            parent, last = last, last[k]
        new = type(last)()
        new[key] = 1
        new.update(last)
        if parent is None:
            body.clear()
            body.update(new)
        else:
            parent[path[-1]] = new

    return change


def _middle(body: Any) -> None:
    old = body["s"]
    body["s"] = type(old)(a=1, b=2, c=3)


def test_lines_added_after_one_line_deepest_first() -> None:
    def both(body: Any) -> None:
        body["a"]["e"] = 3
        body["a"]["b"]["d"] = 2

    assert rewrite("a:\n  b:\n    c: 1\nz: 0\n", both) == "a:\n  b:\n    c: 1\n    d: 2\n  e: 3\nz: 0\n"


LEFT = [
    ("a: 1\r", _set(("a",), 2)),  # a lone \r: a line break PyYAML counts and str does not
    ("a: 1\u2028b: 2\n", _set(("a",), 2)),
    ("a: [1\n", _set(("a",), 2)),  # not YAML
    ("a: 1\na: 2\n", _set(("a",), 3)),  # a duplicate key
    ("a:\n  b: 1\n  b: 2\nc: 0\n", _set(("c",), 3)),
    ("a: 1\nb: 2\n", lambda b: b.pop("a")),  # a key removed
    ("a: 1\nb: 2\n", lambda b: b.pop("b")),
    ("a: 1\nb: 2\n", lambda b: b.update(a=b.pop("a"))),  # a key moved
    ("a:\n  - x\n  - y\n", lambda b: b["a"].pop()),  # an item removed
    ("a: {b: 1}\n", _set(("a", "c"), 2)),  # a flow mapping grown
    ("a: [x]\n", _append(("a",), "y")),
    ("a: 1\n", _set(("a",), "x")),  # another type
    ("a: &v 1\nb: *v\n", _set(("a",), 2)),  # an anchor
    ("a: !!str x\n", _set(("a",), "y")),  # a tag
    ("x: &m {k: 1}\na:\n  <<: *m\n  b: 1\n", _set(("a", "b"), 2)),  # a merge key
    ("a: |\n  text\n", _set(("a",), "y")),  # a block scalar
    ("a:\n  b: |\n    text\nc: 0\n", _set(("a", "d"), 1)),  # after a block scalar
    ("a: x\n  y\n", _set(("a",), "z")),  # a scalar on two lines
    ("a: '1'\n", _set(("a",), 2)),  # a quoted number is a string
    ('a: "x"\n', _set(("a",), "é")),  # not ASCII, in double quotes
    ("a: x\n", _set(("a",), "\x07")),  # not printable
    ("a: x\n", _set(("a",), True)),
    ("a:\n  b: 1\n  # note\nc: 2\n", lambda b: b["a"].update(b=5, d=3)),
    ("a:\n  b: &v 1\n  c: *v\n", _set(("a", "d"), 3)),  # an alias last: its node is written at its anchor
    ("a:\n  b: &v 1\n  c:  *v\n", _set(("a", "d"), 3)),
    ("a: {b: 1,\n  }\n", _set(("a", "c"), 2)),  # a flow mapping grown, on lines of its own
    ("a: [x,\n  ]\n", _append(("a",), "y")),  # a comment below a line that changes
    ("a: {}\n", _set(("a", "b"), 1)),
    ("a: []\n", _append(("a",), 1)),
    ("l:\n  -   x\n", _append(("l",), "y")),  # a dash with more than one space after it
    ("- - x\n", lambda b: b[0].append("y")),  # an item on its parent's line
]


@pytest.mark.parametrize(("text", "change"), LEFT)
def test_left_to_the_round_trip(text: str, change: Callable[[Any], None]) -> None:
    assert rewrite(text, change) is None


def test_indents_as_most_of_the_file_writes_them() -> None:
    assert inplace.indents("a:\n    b: 1\nc:\n    d: 1\ne:\n  f: 1\n") == (4, 0)
    assert inplace.indents("a:\n  - x\nb:\n  - y\nc:\n- z\n") == (2, 2)
    assert inplace.indents("a:\n- b:\n    c: 1\n") == (2, 0)  # '- b:' opens a block at the key's column
    assert inplace.indents("l:\n  - b:\n      c: 1\n") == (2, 2)  # '- b:' at 2 opens a block at 4
    assert inplace.indents("e:\n  f: 1\na:\n    b: 1\nc:\n    d: 1\n") == (4, 0)  # the most, not the first
    assert inplace.indents("a:\nb: 1\n") == (2, 0)  # a key with no value: nothing below it
    assert inplace.indents("a: |\n  x:\nb: |\n  y:\nc: 1\n") == (2, 0)  # a line less indented than one opening
    assert inplace.indents("a: 1\n") == (2, 0)  # nothing opens a block: two and zero
    assert inplace.indents("a:  # why\n   b: 1\n") == (3, 0)
    assert inplace.indents("a:\n\n# c\n   b: 1\n") == (3, 0)  # blank and comment lines skipped
    assert inplace.indents("a: b:\n  c: 1\n") == (2, 0)
    assert inplace.indents("a:\nb: 1\n  c: 1\n") == (2, 0)  # after a line that opens nothing, no indent counts


def test_a_long_file_past_the_small_ints() -> None:
    # 300 keys and a value on line 301: counts and line numbers past CPython's cached ints (-5 to 256)
    text = "".join(f"k{i}: {i}\n" for i in range(300)) + "last: x\n"
    assert rewrite(text, _set(("last",), "y")) == text.replace("last: x", "last: y")
