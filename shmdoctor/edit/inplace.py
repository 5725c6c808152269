"""A YAML file's change written as text where that is exact, without a round trip through ruamel.yaml (which loads
and dumps the whole file: four times plain lint on a compose file of 2,000 services): the editors change a plain
parse of the file, the change is found by comparing it with an untouched copy, and it is written into the text
only where it is scalars replaced (each in its own quoting), keys added to a block mapping and items added to a
block list (after the last, where the round trip places them, in the file's own indents; keys before the first).
Anything else (a key removed, a flow collection grown, a value under an anchor, an alias or a merge key, a duplicate
key ruamel refuses, a block scalar, comments below a line that changes and grows) is None: the round trip does it.
The text written is read again and must be the changed parse, or it is None too."""

from __future__ import annotations

import functools
import json
import pickle
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..errors import UsageError
from ..probe import documents

_STR = "tag:yaml.org,2002:str"
# A string written plain in a block or a flow: no indicator first, no ': ' or ' #', no flow indicator, no quote.
_PLAIN = re.compile(r"(?:[A-Za-z0-9_./=+~]|-(?=\S))(?:[^\s:,\[\]{}'\"]|:(?=[^\s,\[\]{}])| (?=[^\s#]))*")
_BREAKS = re.compile("[\x85\u2028\u2029\ufeff]|\r(?!\n)")  # line breaks str and PyYAML count differently; a BOM


class _Inexact(Exception):
    """The change is not one this module writes exactly."""


Edit = tuple[int, int, str]  # text[start:end] becomes the string
# Lines added after a block collection: (the end of its last value's line, how deep it is, its column, the lines)
Tail = tuple[int, int, int, str]


def rewrite(text: str, source: str, change: Callable[[list[tuple[int, Any]]], None]) -> str | None:
    """`text` with what change(documents) does to its parsed documents ((index, body) pairs, changed in place),
    written as text edits; None where that is not exact."""
    if _BREAKS.search(text):
        return None
    try:
        docs = documents.parse(text, source)
        untouched = pickle.loads(pickle.dumps([d.body for d in docs], pickle.HIGHEST_PROTOCOL))
    except (UsageError, pickle.PicklingError, TypeError, AttributeError):
        return None
    yaml, loader = documents._yaml_loader(source)
    nodes = list(yaml.compose_all(text, Loader=loader))  # nesting bounded by the parse above
    if _duplicates(yaml, nodes):  # ruamel refuses the file: so does --fix, said once, by the round trip
        return None
    changed = [(d.index, d.body) for d in docs]
    change(changed)
    edits: list[Edit] = []
    tails: list[Tail] = []
    try:
        for doc, before in zip(docs, untouched):
            _compare(yaml, loader, text, nodes[doc.index], before, doc.body, edits, tails)
        edits += _placed(text, tails, edits)
    except _Inexact:
        return None
    pieces, done = [], 0
    for start, end, new in sorted(edits):
        pieces += [text[done:start], new]
        done = end
    out = "".join([*pieces, text[done:]])
    try:
        again = [(d.index, d.body) for d in documents.parse(out, source)]
    except UsageError:
        return None
    return out if again == changed else None


def _duplicates(yaml: Any, nodes: list) -> bool:
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            if len(set(keys)) != len(keys):
                return True
            todo.extend(v for _, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
    return False


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _compare(
    yaml: Any, loader: Any, text: str, node: Any, before: Any, after: Any, edits: list[Edit], tails: list[Tail], depth=0
) -> None:
    """The edits that make `node` (which reads as `before`) read as `after`; lines added after a collection, with
    how deep it is, in `tails`."""
    if type(before) is not type(after) or text[node.start_mark.index : node.start_mark.index + 1] in ("&", "!", "*"):
        raise _Inexact  # a value of another type, an anchored or tagged node (an alias reaches its anchor's node)
    if isinstance(before, dict):
        if not isinstance(node, yaml.MappingNode):
            raise _Inexact
        pairs = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.tag == _STR}
        if any(k.tag != _STR for k, _ in node.value if k.value == "<<"):
            raise _Inexact  # a merge key: what it merges is written elsewhere
        if [k for k in after if k in before] != list(before):
            raise _Inexact  # a key removed or moved
        added = [k for k in after if k not in before]
        if added:
            _added(yaml, loader, text, node, list(after), added, after, edits, tails, depth)
        for key in before:
            if not _same(before[key], after[key]):
                if key not in pairs:
                    raise _Inexact
                _compare(yaml, loader, text, pairs[key][1], before[key], after[key], edits, tails, depth + 1)
    elif isinstance(before, list):
        if not isinstance(node, yaml.SequenceNode) or len(before) > len(after):
            raise _Inexact
        if len(after) > len(before):
            tails.append(_appended(yaml, loader, text, node, after[len(before) :], depth))
        for item, old, new in zip(node.value, before, after):
            if not _same(old, new):
                _compare(yaml, loader, text, item, old, new, edits, tails, depth + 1)
    else:
        if not isinstance(node, yaml.ScalarNode) or node.start_mark.line != node.end_mark.line:
            raise _Inexact
        style, start, end = node.style or "", node.start_mark.index, node.end_mark.index
        written = text[start:end]
        if not (
            (style == "" and written == node.value)
            or (style == "'" and written == "'" + node.value.replace("'", "''") + "'")
            or (style == '"' and len(written) > 1 and written[0] == written[-1] == '"')
        ):
            raise _Inexact
        edits.append((start, end, _scalar(yaml, loader, after, style)))


def _added(
    yaml: Any, loader: Any, text: str, node: Any, keys: list, added: list, after: dict, edits, tails, depth: int
) -> None:
    """Keys added to a block mapping, all after its last key (a tail) or all before its first, each written as the
    round trip writes it (a mapping or a list below its key, in the file's own indents)."""
    if node.flow_style or not node.value:
        raise _Inexact
    first = node.value[0][0]
    column = first.start_mark.column
    lines = "".join("\n" + line for k in added for line in _entry(yaml, loader, text, k, after[k], column))
    if keys[-len(added) :] == added:
        tails.append((_last_line(yaml, text, node), depth, column, lines))
    elif keys[: len(added)] == added:
        start = text.rfind("\n", 0, first.start_mark.index) + 1
        if text[start : first.start_mark.index] != " " * column:
            raise _Inexact  # the first key shares its line (`- name: x`)
        edits.append((start, start, lines[1:] + "\n"))
    else:
        raise _Inexact


def _appended(yaml: Any, loader: Any, text: str, node: Any, items: list, depth: int) -> Tail:
    """Items added to the end of a block sequence, each a dash at its items' column."""
    if node.flow_style or not node.value:
        raise _Inexact
    first = node.value[0]
    start = text.rfind("\n", 0, first.start_mark.index) + 1
    dash = first.start_mark.column - 2
    if dash < 0 or text[start : first.start_mark.index] != " " * dash + "- ":
        raise _Inexact  # a dash with more than one space after it, or an item on its parent's line
    lines = "".join("\n" + line for item in items for line in _item(yaml, loader, text, item, dash))
    return (_last_line(yaml, text, node), depth, dash, lines)


def _last_line(yaml: Any, text: str, node: Any) -> int:
    """The end of the line of a block collection's last value."""
    leaf = node
    while isinstance(leaf, (yaml.MappingNode, yaml.SequenceNode)) and not leaf.flow_style and leaf.value:
        leaf = leaf.value[-1][1] if isinstance(leaf, yaml.MappingNode) else leaf.value[-1]
        if text[leaf.start_mark.index : leaf.start_mark.index + 1] in ("&", "!", "*"):
            raise _Inexact  # an alias's node is written where its anchor is
    if isinstance(leaf, yaml.ScalarNode) and leaf.style in ("|", ">"):
        raise _Inexact  # a block scalar's end is not its last line
    return _line_end(text, leaf.end_mark.index)


def _placed(text: str, tails: list[Tail], replaced: list[Edit]) -> list[Edit]:
    """Where the round trip places lines added after collections: the tails after one line are one run, deepest
    first (as a dump writes them), placed after the comments below that line, less the blank lines and comments
    less indented than the run's first line that end them (those belong to what follows); before its \\r."""
    runs: dict[int, list[Tail]] = {}
    for tail in tails:
        runs.setdefault(tail[0], []).append(tail)
    edits = []
    for line_end, run in runs.items():
        run.sort(key=lambda t: -t[1])
        column, at, after = run[0][2], line_end, []
        while at < len(text):  # the blank and comment lines between it and the next line of content
            end = _line_end(text, at + 1)
            line = text[at + 1 : end]
            if line.strip(" \r") and not line.lstrip(" ").startswith("#"):
                break
            after.append((end, not line.strip(" \r") or len(line) - len(line.lstrip(" ")) < column, line.strip()))
            at = end
        changed = any(text.rfind("\n", 0, line_end) < start <= line_end for start, _, _ in replaced)
        if changed and any(said for _, _, said in after):  # a comment below a line that changes: the round trip
            raise _Inexact  # places the lines as its own dump has them there
        while after and after[-1][1]:
            after.pop()
        at = after[-1][0] if after else line_end
        at -= text[at - 1 : at] == "\r"
        edits.append((at, at, "".join(t[3] for t in run)))
    return edits


def _entry(yaml: Any, loader: Any, text: str, key: Any, value: Any, column: int) -> list[str]:
    """`key: value` at `column`, a mapping or a list in block style below it as the round trip writes them."""
    head = " " * column + _scalar(yaml, loader, key, "") + ":"
    mapping, dash = indents(text)
    if isinstance(value, dict) and value:
        return [head] + [line for k, v in value.items() for line in _entry(yaml, loader, text, k, v, column + mapping)]
    if isinstance(value, list) and value:
        return [head] + [line for item in value for line in _item(yaml, loader, text, item, column + dash)]
    return [f"{head} {_scalar(yaml, loader, value, '')}"]


def _item(yaml: Any, loader: Any, text: str, value: Any, dash: int) -> list[str]:
    """One item of a block sequence, its dash at column `dash`."""
    if isinstance(value, dict) and value:
        lines = [line for k, v in value.items() for line in _entry(yaml, loader, text, k, v, dash + 2)]
        return [" " * dash + "- " + lines[0][dash + 2 :], *lines[1:]]
    return [" " * dash + "- " + _scalar(yaml, loader, value, "")]


@functools.lru_cache(maxsize=2)  # one file at a time, asked for each value written
def indents(text: str) -> tuple[int, int]:
    """(a mapping's indent under its key, a sequence's dash under its key), as most of the file writes them."""
    mappings: Counter[int] = Counter()
    dashes: Counter[int] = Counter()
    parent = None  # the indentation of the content of the last line that opens a block ('key:', '- key:')
    for line in text.splitlines():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        if parent is not None and indent > parent:
            (dashes if stripped.startswith("- ") else mappings)[indent - parent] += 1
        opens = stripped.split(" #")[0].rstrip().endswith(":")
        parent = (indent + 2 if stripped.startswith("- ") else indent) if opens else None
    return (mappings.most_common(1)[0][0] if mappings else 2), (dashes.most_common(1)[0][0] if dashes else 0)


def _line_end(text: str, at: int) -> int:
    """The index of the newline that ends the line holding `at` (the text's length on its last line)."""
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _scalar(yaml: Any, loader: Any, value: Any, style: str) -> str:
    """A string or an integer as YAML writes it in `style` ('' plain, ' or "), reading back as the same value."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _Inexact
    if isinstance(value, int):
        if style:
            raise _Inexact  # a quoted number is a string: the round trip keeps it one
        return str(value)
    if style == '"':
        if not value.isascii() or not value.isprintable():
            raise _Inexact
        return json.dumps(value)
    plain = style == "" and value.isascii() and _PLAIN.fullmatch(value)
    if plain and loader.resolve(loader, yaml.ScalarNode, value, (True, False)) == _STR:
        return value
    if not value.isprintable():
        raise _Inexact
    return "'" + value.replace("'", "''") + "'"
