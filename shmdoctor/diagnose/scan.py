"""Matching log lines against the catalogue, one candidate line at a time: the reader (probe/logs.py) hands over only
lines that hold one of `anchors()`, with their numbers, so a gigabyte of log costs one fast pass. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .catalogue import BY_ID, SIGNATURES, Cause, Consumer, Implausible, Signature

MAX_LINE = 64 * 1024  # bytes of a line that are matched; the rest of an overlong line is not looked at
EXCERPT = 240  # characters of the matched line kept in a diagnosis: never more of the log than that line
KEEP = 3  # occurrences kept per signature (the first ones); the rest are counted


@dataclass(frozen=True)
class Diagnosis:
    signature: str
    cause: Cause
    consumer: Consumer
    line: int | None  # 1-based line number in the log; None for an exit status or the engine's state
    excerpt: str  # the matched line only, truncated
    bytes_needed: int | None = None
    reason: str = ""  # why the facts changed the cause (not-shm), or what they add; empty when the text decides

    def as_dict(self) -> dict:
        return {
            "signature": self.signature,
            "cause": self.cause,
            "consumer": self.consumer,
            "line": self.line,
            "excerpt": self.excerpt,
            "bytes_needed": self.bytes_needed,
        }


def anchors() -> list[str]:
    """The literals a candidate line holds: every signature's anchor and the lines that change a match's meaning."""
    found = {s.anchor for s in SIGNATURES if s.anchor}
    found |= {s.not_after.pattern.replace("\\", "") for s in SIGNATURES if s.not_after is not None}
    return sorted(found)


def excerpt(text: str, start: int, end: int) -> str:
    """The matched line, cut to EXCERPT characters around the match, control characters made visible."""
    text = "".join(c if c.isprintable() or c == "\t" else "?" for c in text.strip())
    if len(text) <= EXCERPT:
        return text
    lo = max(0, min(start - 40, len(text) - EXCERPT))
    return ("…" if lo else "") + text[lo : lo + EXCERPT] + ("…" if lo + EXCERPT < len(text) else "")


@dataclass
class Scanner:
    """Accumulates the matches of candidate lines fed in order."""

    found: dict[str, list[Diagnosis]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    lines: int = 0  # the last line number seen
    _prev: tuple[int, str] = (0, "")  # the previous candidate line: what `not_after` looks at

    def line(self, number: int, raw: bytes | str) -> None:
        text = raw[:MAX_LINE].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:MAX_LINE]
        text = text.rstrip("\r\n")
        self.lines = max(self.lines, number)
        # A progress bar redraws with \r: each redraw is its own line for matching.
        for part in text.split("\r") if "\r" in text else (text,):
            for sig in SIGNATURES:
                if sig.anchor and sig.anchor in part:
                    m = sig.pattern.search(part)
                    if m:
                        self._add(sig, number, part, m)
        self._prev = (number, text)

    def _add(self, sig: Signature, number: int, text: str, m) -> None:
        n = self.counts.get(sig.id, 0)
        self.counts[sig.id] = n + 1
        if n >= KEEP:
            return
        cause: Cause = sig.cause
        reason = ""
        prev_number, prev_text = self._prev
        if sig.not_after is not None and prev_number == number - 1 and sig.not_after.search(prev_text):
            cause, reason = "not-shm", f"the line before says {sig.not_after.pattern!r}: a failed registration"
        try:
            needed = sig.needed(m) if sig.needed else None
        except Implausible as e:
            needed, reason = None, "; ".join(filter(None, (reason, str(e))))
        self.found.setdefault(sig.id, []).append(
            Diagnosis(sig.id, cause, sig.consumer, number, excerpt(text, m.start(), m.end()), needed, reason)
        )

    def diagnoses(self) -> tuple[Diagnosis, ...]:
        """In the order of the log, less the signatures a more specific one in the same log supersedes."""
        present = set(self.found)
        kept = [
            d for sig_id, ds in self.found.items() if not present.intersection(BY_ID[sig_id].superseded_by) for d in ds
        ]
        return tuple(sorted(kept, key=lambda d: (d.line or 0, d.signature)))


def scan_text(text: str | bytes) -> Scanner:
    """A log already in memory (run's ring, a test's case), line by line."""
    scanner = Scanner()
    # \r is not a line end (grep -n)
    lines: Sequence[str | bytes] = text.split("\n") if isinstance(text, str) else text.split(b"\n")
    keys = anchors()
    for number, raw in enumerate(lines, 1):
        probe = raw if isinstance(raw, str) else raw[:MAX_LINE].decode("utf-8", "replace")
        if any(a in probe for a in keys):
            scanner.line(number, probe)
    scanner.lines = max(scanner.lines, len(lines))
    return scanner
