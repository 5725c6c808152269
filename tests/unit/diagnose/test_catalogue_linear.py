"""Every pattern of the catalogue is linear on any line: no unbounded repetition (read from the compiled pattern's own
parse), and no super-linear growth on long adversarial lines built from its literals and every kind of character its
classes take. The cost is the CPU time of the matching thread (a busy machine's preemption is no cost of the pattern),
the least of several tries, and its growth is what is judged: 64x the line may cost 512x, 8x a linear pattern's 64x and
8x below a quadratic's 4096x, whatever the caches; a hang bound of CPU seconds on the longest line. A log number is read
by one bounded function."""

from __future__ import annotations

import re
import time
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]

import pytest

from shmdoctor.diagnose import SIGNATURES, reader, scan_text
from shmdoctor.diagnose.catalogue import PLAUSIBLE, Implausible, number
from shmdoctor.diagnose.scan import MAX_LINE

PATTERNS = (
    {s.id: s.pattern for s in SIGNATURES if s.anchor}
    | {f"{s.id}.not_after": s.not_after for s in SIGNATURES if s.not_after is not None}
    # the general reader's: each context and failure it reads, a path on a failure's line, df's percent
    | {f"reader: {c.what}": c.pattern for c in reader.CONTEXTS}
    | {f"reader: {e.id}": e.pattern for e in reader.EVENTS}
    | {"reader: a path": reader._PATH, "reader: df's use": reader._DF_USE}
)
ANCHORS = {s.id: s.anchor for s in SIGNATURES if s.anchor}
# One of each kind of character a class may take or refuse: word, digit, point, comma, space, tab, quote, slash,
# brackets, punctuation, a control character, non-ASCII letters and digits.
ALPHABET = list("a1.,' \t/_-:()<>[]=\x00é²１")


def _walk(parsed):
    for op, arg in parsed:
        yield op, arg
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            yield from _walk(arg[2])
        elif op is sre_constants.SUBPATTERN:
            yield from _walk(arg[3])
        elif op is sre_constants.BRANCH:
            for branch in arg[1]:
                yield from _walk(branch)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            yield from _walk(arg[1])


def _literals(pattern: re.Pattern[str]) -> set[str]:
    """The runs of literal characters in a pattern, each as it would appear in a line."""
    found, run = set(), ""
    for op, arg in _walk(sre_parse.parse(pattern.pattern, pattern.flags)):
        if op is sre_constants.LITERAL:
            run += chr(arg)
            continue
        if run:
            found.add(run)
        run = ""
    return found | ({run} if run else set())


@pytest.mark.parametrize("name", PATTERNS)
def test_every_repetition_is_bounded(name):
    unbounded = [
        arg
        for op, arg in _walk(sre_parse.parse(PATTERNS[name].pattern, PATTERNS[name].flags))
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and arg[1] is sre_constants.MAXREPEAT
    ]
    assert unbounded == [], f"{name}: an unbounded repetition (* or +) in {PATTERNS[name].pattern!r}"


def _lines(name: str, length: int) -> list[str]:
    """Adversarial lines of about `length` characters: a literal of the pattern then one kind of character or
    another literal repeated, or the pair repeated (a start on every repeat), for every literal and character."""
    fragments = _literals(PATTERNS[name]) | ({ANCHORS[name]} if name in ANCHORS else set())
    lines = []
    for head in fragments:
        for body in [*fragments, *ALPHABET]:
            lines.append((head + body * length)[:length])
            lines.append(((head + body) * (length // (len(head) + len(body)) + 1))[:length])
    return lines


def _seconds(pattern: re.Pattern[str], line: str, repeat: int = 3) -> float:
    """CPU seconds of one search, the least of `repeat` (this thread's own time: not the load around it)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time()
        pattern.search(line)
        best = min(best, time.thread_time() - start)
    return best


@pytest.mark.parametrize("name", PATTERNS)
def test_long_adversarial_lines_cost_linear_time(name):
    pattern = PATTERNS[name]
    # The costliest shapes at a small size, then each of them at 1/64 of the longest line and at the longest.
    shapes = sorted(_lines(name, 4096), key=lambda line: _seconds(pattern, line, 1), reverse=True)[:3]
    for shape in shapes:
        head = max(_literals(pattern) | {""}, key=lambda f: shape.startswith(f) and len(f))
        body = shape[len(head) :][:64] or head  # the shape grows by repeating its body
        short = (head + body * (MAX_LINE // 64 // len(body) + 1))[: MAX_LINE // 64]
        long = (head + body * (MAX_LINE // len(body) + 1))[:MAX_LINE]
        t_short, t_long = _seconds(pattern, short, 9), _seconds(pattern, long, 9)
        assert t_long < 2.0, f"{name}: {t_long:.2f} s on a {MAX_LINE}-character line {long[:60]!r}…"
        assert t_long < 512 * t_short + 0.01, (
            f"{name}: super-linear, {t_short * 1e3:.1f} ms at {len(short)} characters, {t_long * 1e3:.1f} ms at "
            f"{len(long)}: {long[:60]!r}…"
        )


def test_a_log_of_adversarial_lines_is_scanned_within_a_bound():
    """Every anchor then a run of word, digit, space, slash or control characters (the anchors in turn, each kind
    after a fifth of them), each a whole MAX_LINE line, through the scanner as `run` does: within 0.1 s of CPU a
    line, however many anchors there are (the patterns' own worst lines are timed above)."""
    keys = sorted(set(ANCHORS.values()) | set(reader.ANCHORS))
    lines = [(anchor + "a1 /\x00"[i % 5] * MAX_LINE)[:MAX_LINE] for i, anchor in enumerate(keys)]
    start = time.thread_time()
    scan_text("\n".join(lines))
    assert time.thread_time() - start < 0.1 * len(lines)


@pytest.mark.parametrize(
    "text, unit, expected",
    [
        ("9637892", 1, 9637892),
        ("12.0", 10**9, 12 * 10**9),
        ("5.04", 2**30, int(5.04 * 2**30)),
        ("1.2.3", 1, None),
        ("1..5", 1, None),
        (".5", 1, None),
        ("9" * 41, 1, None),  # more digits than a number has here: not read
        ("²", 1, None),
        ("１２", 1, None),
        ("", 1, None),
        (str(2**50), 1, 2**50),
    ],
)
def test_a_log_number_is_read_by_one_bounded_function(text, unit, expected):
    assert number(text, unit) == expected


def test_a_number_above_1_pib_is_implausible_and_said_so():
    with pytest.raises(Implausible, match="more than 1 PiB"):
        number(str(PLAUSIBLE + 1))
    with pytest.raises(Implausible):
        number("9" * 40, 2**30)
