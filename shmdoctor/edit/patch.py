"""A change made on a parsed copy of a file, written back into the file's own text: only the lines the change
needs, whatever else the library that dumps the copy would have rewritten (spacing, quoting, wrapping, the
indentation of a list). Lines are matched by their text without indentation; each changed or added line takes the
indentation the file gives its neighbour. The caller parses the result again before anything is written."""

from __future__ import annotations

from .matching import Matcher


class Unpatchable(Exception):
    """The change touches lines the file writes differently from its dump: it cannot be placed line for line."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def patch(original: str, before: str, after: str) -> str:
    """`original` with the lines that differ between `before` (the file parsed and dumped unchanged) and `after`
    (the same, changed), each hunk placed where its neighbouring lines sit in `original`."""
    o, b, a = (t.splitlines(keepends=True) for t in (original, before, after))
    bare = bool(o) and not o[-1].endswith("\n")  # a last line without its newline: compared as dumps write it
    if bare:
        o[-1] += "\n"
    where: dict[int, int] = {}  # a line of `before` -> the same line of `original`
    stripped = Matcher([line.strip() for line in b], [line.strip() for line in o])
    for tag, i1, i2, j1, _ in stripped.get_opcodes():
        if tag == "equal":
            where.update((i1 + k, j1 + k) for k in range(i2 - i1))
    out, done, seen = [], 0, 0  # lines of `original` already copied, of `before` already changed
    swaps = []  # one line changed that the file writes inside a longer one ({"sharedMemorySize": 512} inline)
    for tag, i1, i2, j1, j2 in Matcher(b, a).get_opcodes():
        if tag == "equal":
            continue
        if tag == "insert":  # added at the end of a block: above the blank lines and comments of what follows
            while i1 > seen and _leads(b[i1 - 1], a[j1]):
                i1 -= 1
            i2 = i1
        seen = i2
        if tag == "replace" and i2 - i1 == j2 - j1 == 1 and i1 not in where:
            swaps.append((b[i1].strip().rstrip(","), a[j1].strip().rstrip(",")))
            continue
        if any(i not in where for i in range(i1, i2)):
            raise Unpatchable(f"line {i1 + 1} of the change is written differently in the file")
        if i1 < i2:
            start, end, near = where[i1], where[i2 - 1] + 1, i1
        elif i1 - 1 in where:
            start = end = where[i1 - 1] + 1
            near = i1 - 1
        elif i1 in where:
            start = end = where[i1]
            near = i1
        else:
            raise Unpatchable(f"no line of the file sits where line {i1 + 1} of the change goes")
        if start < done or (i1 < i2 and end - start != i2 - i1):
            raise Unpatchable(f"the change at line {i1 + 1} does not sit in one place of the file")
        shift = _indent(o[where[near]]) - _indent(b[near])
        changed = [_shifted(line, shift) for line in a[j1:j2]]
        if end - start == len(changed):  # lines changed one for one: each keeps its comment where the file had it
            changed = [_spaced(old, line) for old, line in zip(o[start:end], changed)]
        out += o[done:start] + changed
        done = end
    text = "".join(out + o[done:])
    for old, new in swaps:  # where the file holds that text once, and only there
        if text.count(old) != 1:
            raise Unpatchable(f"{old} is written differently in the file")
        text = text.replace(old, new)
    return text[:-1] if bare and text.endswith("\n") else text


def _shifted(line: str, shift: int) -> str:
    return " " * max(0, _indent(line) + shift) + line.lstrip(" ") if line.strip() else line


def _spaced(old: str, new: str) -> str:
    """new, with the spacing `old` has before the comment both end with (a dump aligns comments its own way)."""
    body = new.rstrip("\r\n")
    for at in (i for i, c in enumerate(old) if c == "#" and i and old[i - 1] in " \t"):
        comment = old[at:].rstrip("\r\n")
        if body.endswith(comment) and body[: -len(comment)][-1:] in (" ", "\t"):
            code, gap = body[: -len(comment)].rstrip(), old[:at][len(old[:at].rstrip()) :]
            return code + gap + comment + new[len(body) :]
    return new


def _leads(line: str, added: str) -> bool:
    """A blank line, or a comment less indented than the added line: it belongs to what follows, not above it."""
    text = line.strip()
    return not text or (text.startswith("#") and _indent(line) < _indent(added))
