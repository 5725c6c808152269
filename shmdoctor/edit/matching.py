"""Which lines of two texts are the same, in near-linear time: what --fix needs to place a change (patch.py) and to
show it (--diff). difflib's SequenceMatcher without its autojunk heuristic is quadratic on a file of many alike
lines (1,000 compose services: minutes); with it, a line common enough is never matched. Instead, as git's patience
diff: the common head and tail are matched, then the lines that occur once on each side and in the same order
anchor the rest, each stretch between two anchors matched again the same way; a stretch with no such line, small
enough, by SequenceMatcher."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from difflib import Match, SequenceMatcher

SMALL = 4000  # a stretch without an anchor: SequenceMatcher's quadratic cost stays under ~0.1 s up to here


def blocks(a: Sequence[str], b: Sequence[str]) -> list[Match]:
    """The lines a and b have in common, as SequenceMatcher.get_matching_blocks() gives them (the last (len(a),
    len(b), 0))."""
    found: list[tuple[int, int]] = []  # (i, j) of each line matched
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            found.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            found.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if anchors:
            found += anchors
            edges = [(alo - 1, blo - 1), *anchors, (ahi, bhi)]
            stack += [(i + 1, i2, j + 1, j2) for (i, j), (i2, j2) in zip(edges, edges[1:])]
        else:
            matcher = SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=(ahi - alo) + (bhi - blo) > SMALL)
            found += [(alo + i + k, blo + j + k) for i, j, n in matcher.get_matching_blocks() for k in range(n)]
    return list(_runs(sorted(found), len(a), len(b)))


def _anchors(a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int) -> list[tuple[int, int]]:
    """The lines that occur once in a[alo:ahi] and once in b[blo:bhi], the longest run of them in the same order."""
    once: dict[str, int | None] = {}
    for i in range(alo, ahi):
        once[a[i]] = None if a[i] in once else i
    in_b: dict[str, int | None] = {}
    for j in range(blo, bhi):
        line = b[j]
        if once.get(line) is not None:
            in_b[line] = None if line in in_b else j
    pairs = [(once[line], j) for line, j in in_b.items() if j is not None]
    pairs.sort(key=lambda pair: pair[1])
    return _increasing([(i, j) for i, j in pairs if i is not None])


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of pairs (sorted by j) whose i increase too (patience sorting, n log n)."""
    tops: list[int] = []  # the smallest last i of an increasing run of each length
    ends: list[int] = []  # the index into pairs of that last pair
    before: list[int] = []  # each pair's predecessor in its run
    for k, (i, _) in enumerate(pairs):
        at = bisect_left(tops, i)
        if at == len(tops):
            tops.append(i)
            ends.append(k)
        else:
            tops[at], ends[at] = i, k
        before.append(ends[at - 1] if at else -1)
    out, k = [], ends[-1] if ends else -1
    while k >= 0:
        out.append(pairs[k])
        k = before[k]
    return out[::-1]


def _runs(pairs: list[tuple[int, int]], alen: int, blen: int) -> Iterator[Match]:
    """Matched lines (sorted) as runs of consecutive ones, then the closing (alen, blen, 0)."""
    start = None
    for k, (i, j) in enumerate(pairs):
        if start is None:
            start = (i, j, k)
        elif (i, j) != (pairs[k - 1][0] + 1, pairs[k - 1][1] + 1):
            yield Match(start[0], start[1], k - start[2])
            start = (i, j, k)
    if start is not None:
        yield Match(start[0], start[1], len(pairs) - start[2])
    yield Match(alen, blen, 0)


class Matcher(SequenceMatcher):
    """SequenceMatcher's opcodes and grouped opcodes over blocks(): the same answers' shape, near-linear."""

    def __init__(self, a: Sequence[str], b: Sequence[str]):
        super().__init__(None, a, b, autojunk=True)  # autojunk: set_seqs' index of b stays linear; unused here
        self.found = blocks(a, b)

    def get_matching_blocks(self) -> list[Match]:
        return self.found


def unified_diff(before: list[str], after: list[str], old: str, new: str, context: int = 3) -> Iterator[str]:
    """difflib.unified_diff's lines (its header, its hunks), from Matcher's opcodes."""
    started = False
    for group in Matcher(before, after).get_grouped_opcodes(context):
        if not started:
            started = True
            yield f"--- {old}\n"
            yield f"+++ {new}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in before[i1:i2])
                continue
            yield from ("-" + line for line in before[i1:i2])
            yield from ("+" + line for line in after[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it: 'start,length', 1-based; an empty one is 'start-1,0'."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"
