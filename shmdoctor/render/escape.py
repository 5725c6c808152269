"""What a name can do to a terminal, undone once for all text output: names come from files, engines, process
tables and logs, and a service named `\\x1b]0;...\\x07\\x1b[2J` would retitle the window and clear the screen.

escaped() gives back a document whose every string has its control characters written out as Python escapes
(`\\x1b`, `\\x07`, `\\u202e`): C0 controls but the newline of a multi-line snippet, DEL, C1 controls, the
bidirectional overrides that reorder what is shown, and lone surrogates (which no terminal can print). A name is one
line: its newlines are escaped too. Strings without any (nearly all) are kept as they are, and so is every object
that holds none, so the cost is a walk. The text renderers style what they get; the JSON renderers need none of
this (json.dumps escapes every control character and surrogate).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

_CONTROL = "\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
# Every character these match is one that str.isprintable() refuses (a test proves it): a printable string, nearly
# every one, needs neither, and they are compiled (and cached by re) at first use.
_UNSAFE = f"[{_CONTROL}]"  # all but the newline
_UNSAFE_IN_A_NAME = f"[{_CONTROL}\n\u2028\u2029]"
# Fields that name something: one line each, whatever the file or the engine says.
NAMES = {"name", "owner", "id", "source", "target", "path", "cmdline", "command", "label"}


def escape(text: str, *, one_line: bool = True) -> str:
    """text with its unsafe characters written as escapes; the newline is kept where one_line is False."""
    pattern = _UNSAFE_IN_A_NAME if one_line else _UNSAFE
    if text.isprintable() or not re.search(pattern, text):
        return text
    return re.sub(pattern, lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


def escaped(document: Any) -> Any:
    """The document (a dataclass, and what it holds: tuples, lists, dicts, frozensets) with every string escaped;
    the same object where nothing needed it."""
    return _walk(document, False, {})


def _walk(value: Any, one_line: bool, seen: dict[tuple[int, bool], Any]) -> Any:
    """`seen`: what an object already walked became; an audit's containers judged alike share their findings."""
    kind = _KINDS.get(type(value))
    if kind is None:
        kind = _KINDS[type(value)] = _kind(type(value))
    if kind == "str":
        return escape(value, one_line=one_line)
    if kind == "leaf":
        return value  # numbers, None, enums: nothing to escape
    key = (id(value), one_line)
    if key in seen:
        return seen[key]
    if kind == "dataclass":
        changes = {}
        for f in _init_fields(type(value)):
            old = getattr(value, f)
            new = _walk(old, f in NAMES, seen)
            if new is not old:
                changes[f] = new
        out = dataclasses.replace(value, **changes) if changes else value
    elif kind == "sequence":
        items = [_walk(v, one_line, seen) for v in value]
        if all(new is old for new, old in zip(items, value)):
            out = value
        else:
            out = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    else:
        pairs = [(_walk(k, True, seen), _walk(v, one_line, seen)) for k, v in value.items()]
        unchanged = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items()))
        out = value if unchanged else dict(pairs)
    seen[key] = out
    return out


_KINDS: dict[type, str] = {}  # type -> how to walk it, decided once per type


def _kind(cls: type) -> str:
    if issubclass(cls, str):
        return "str"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if issubclass(cls, (tuple, list, frozenset)):
        return "sequence"
    return "mapping" if issubclass(cls, dict) else "leaf"


_FIELDS: dict[type, tuple[str, ...]] = {}


def _init_fields(cls: type) -> tuple[str, ...]:
    if cls not in _FIELDS:
        _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return _FIELDS[cls]
