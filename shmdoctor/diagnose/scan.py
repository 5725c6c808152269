"""Matching log lines against the catalogue, one candidate line at a time: the reader (probe/logs.py) hands over only
lines that hold one of `anchors()`, with their numbers, so a gigabyte of log costs one fast pass. Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .catalogue import BY_ID, SIGNATURES, Cause, Consumer, Implausible, Signature
from .clues import ANCHORS as CLUE_ANCHORS
from .clues import Clues
from .reader import ANCHORS as READER_ANCHORS
from .reader import DF, Reader, Reading, named_by

MAX_LINE = 64 * 1024  # bytes of a line that are matched; the rest of an overlong line is not looked at
EXCERPT = 240  # characters of the matched line kept in a diagnosis: never more of the log than that line
# Lines a context line reaches: NCCL prints a WARN, a blank line, the next WARN of the same failure (nccl#1518)
BLOCK = 4
WAITING = 64  # matches held at once for the line after them that makes them that: more in BLOCK lines are a flood
ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]")  # colour and cursor codes (CSI), stripped before matching
# What a log collector puts before each line, stripped before matching: containerd's (CRI) pod logs
# '2024-05-01T10:00:00.123456789Z stderr F ', docker logs -t's and kubectl logs --timestamps' RFC 3339 time, and
# journald's and syslog's 'May 01 10:00:00 host python3[123]: '
PREFIX = re.compile(
    r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,30}(?:Z|[+-][0-9]{2}:?[0-9]{2}) (?P<pod>std(?:out|err) [FP] )?"
    r"|[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} \S{1,255} [^\s:\[]{1,255}(?:\[[0-9]{1,20}\])?: )"
)
# Who printed an NCCL line: 'host:pid:tid [dev]', or '[dev]' alone; a context line speaks for its own process only
_EMITTER = re.compile(r"^(?:\[[^\]]{1,40}\] )?((?:\S{1,255}:[0-9]{1,20}:[0-9]{1,20} )?\[[0-9]{1,6}\]) ")


def _emitter(text: str) -> str:
    m = _EMITTER.match(text)
    return m.group(1) if m else ""


FoundBy = Literal["catalogue", "reader"]
# A known text whose consumer the block names (a bare OSError beside SemLock's frames): of these causes
NAMED_CAUSES = frozenset({"shm-space", "shm-missing", "shm-leak", "fd-limit", "remove-ipc"})
# whose known text the block may name better: nobody's, and multiprocessing's by the pool built on it
NAMED_BY_BLOCK: dict[str, frozenset[str] | None] = {"unknown": None, "multiprocessing": frozenset({"celery", "joblib"})}


@dataclass(frozen=True)
class Diagnosis:
    signature: str
    cause: Cause
    consumer: Consumer
    line: int | None  # 1-based line number in the log; None for an exit status or the engine's state
    excerpt: str  # the matched line only, truncated
    bytes_needed: int | None = None
    reason: str = ""  # why the facts changed the cause (not-shm), or what they add; empty when the text decides
    count: int = 1  # lines of the log this signature matched with this cause; this one is the first
    shm_bytes: int | None = None  # the /dev/shm the text says there was (its size, or what was free)
    # catalogue: a known text matched the line; reader: the general reader read an errno or a signal with a
    # shared-memory context in its block (said in evidence)
    found_by: FoundBy = "catalogue"
    evidence: str = ""  # what of the block said shared memory and who: a reading's contexts, a known text's consumer

    def as_dict(self) -> dict:
        return {
            "signature": self.signature,
            "cause": self.cause,
            "consumer": self.consumer,
            "line": self.line,
            "excerpt": self.excerpt,
            "bytes_needed": self.bytes_needed,
            "count": self.count,
            "found_by": self.found_by,
            "evidence": self.evidence,
        }


def anchors() -> list[str]:
    """The literals a candidate line holds: every signature's anchor and the lines that change a match's meaning."""
    found = {s.anchor for s in SIGNATURES if s.anchor}
    found |= {c.pattern.replace("\\", "") for s in SIGNATURES for c in (s.not_after, s.only_after) if c is not None}
    return sorted(found | set(CLUE_ANCHORS) | set(READER_ANCHORS))


class Prefilter:
    """Whether a line holds one of the literals, exactly as grep -F finds them, and fast in Python: one regular
    expression over the lowercased line (each literal lowercased, none that holds another: about half as many) lets
    through the few lines that may, then the literals themselves decide. The expression is the literals' trie (one
    branch a first byte, not one a literal: its cost no longer grows with their number); every part is a literal:
    linear."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.exact = [k.encode() for k in keys]
        low = sorted({k.lower() for k in self.exact})
        fewest = [k for k in low if not any(other != k and other in k for other in low)]
        self.gate = re.compile(_trie(fewest))

    def holds(self, line: bytes) -> bool:
        return self.gate.search(line.lower()) is not None and any(k in line for k in self.exact)


def _trie(keys: Sequence[bytes]) -> bytes:
    """One expression matching exactly the keys (none empty, none a prefix of another), their common starts
    factored: b"ab|ac|d" is b"(?:a(?:b|c)|d)"."""
    firsts: dict[bytes, list[bytes]] = {}
    for key in keys:
        firsts.setdefault(key[:1], []).append(key[1:])
    parts = [re.escape(first) + (_trie(rests) if all(rests) else b"") for first, rests in sorted(firsts.items())]
    return b"(?:" + b"|".join(parts) + b")"


def excerpt(text: str, start: int) -> str:
    """The matched line, cut to EXCERPT characters from 40 before the match, control characters made visible."""
    kept = text.lstrip()
    start -= len(text) - len(kept)  # the match's place in the line its indentation left
    text = "".join(c if c.isprintable() or c == "\t" else "?" for c in kept.rstrip())
    lo = max(0, min(start - 40, len(text) - EXCERPT))
    return ("…" if lo else "") + text[lo : lo + EXCERPT] + ("…" if lo + EXCERPT < len(text) else "")


def _counting(counted: list | None, sig: Signature, key: tuple[str, Cause] | None) -> list | None:
    """The keys a line counted, as long as each counts whatever lines are near (no context line decides it)."""
    if counted is None or key is None or sig.not_after is not None or sig.only_after is not None:
        return None
    return [*counted, key]


@dataclass
class Scanner:
    """Accumulates the matches of candidate lines fed in order: the first line of each signature and cause, and how
    many lines it matched (every one counted, whatever the log's size), and what the log says of the job."""

    found: dict[tuple[str, Cause], Diagnosis] = field(default_factory=dict)
    clues: Clues = field(default_factory=Clues)
    reader: Reader = field(default_factory=Reader)
    _context: dict[str, tuple[int, str]] = field(default_factory=dict)  # a context pattern's last line: number, emitter
    # The last part of a line, for each signature whose literal it holds but not its text: the next line may be the
    # rest, wrapped
    _open: list[tuple[int, str, Signature]] = field(default_factory=list)
    # Matches that wait for the line that makes them that (only_after) within BLOCK lines after: an error printed
    # above its traceback (billiard, Python 2) comes before the SemLock frame
    _waiting: list[tuple[int, str, Signature, re.Match[str]]] = field(default_factory=list)

    def line(self, number: int, raw: bytes | str, repeats: int = 1) -> None:
        """Line `number` of the log; `repeats`: the same line is each of the next repeats - 1 too (a run the reader
        collapsed). Once matching it again can only count it again (no line it waits for or wraps, no context, no
        clue that a nearer line changes), the rest of the run is counted, not matched: a million of one error cost
        what one does."""
        text = raw[:MAX_LINE].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:MAX_LINE]
        text = text.rstrip("\r\n")
        if "\x1b" in text:
            text = ANSI.sub("", text)
        prefix = PREFIX.match(text)  # anchored: one at most
        pod = bool(prefix and prefix.group("pod"))
        if prefix:
            text = text[prefix.end() :]
        first, last = number, number + repeats - 1
        while True:
            if pod:
                self.clues.pod_log(number)
            counted = self._match(number, text)
            if number == last:
                return
            number += 1
            # Steady from the third: the line before it was this one too, as the one before that (what the run's first
            # line finished of the line before the run, and what it left open for the second, are theirs alone)
            steady = number - first >= 2 and not self._waiting and self.clues.settled(text, number)
            # a line the general reader reads a failure in is read again (its block moves on with it)
            if steady and counted is not None and (counted or not self.reader.reads(text)):
                for key in counted:
                    self.found[key] = replace(self.found[key], count=self.found[key].count + last - number + 1)
                if pod:
                    self.clues.pod_log(last)
                for part in text.split("\r"):  # what it says, said by its last line
                    self.clues.line(part, last)
                    self.reader.line(part, last, bool(counted))
                self._open = [(last, part, sig) for _, part, sig in self._open]  # the next line may finish it
                return

    def _match(self, number: int, text: str) -> list[tuple[str, Cause]] | None:
        """One line through the catalogue; the (signature, cause) it counted where that is all it did, else None."""
        counted: list[tuple[str, Cause]] | None = []
        if self._waiting:
            self._waiting = [w for w in self._waiting if number - w[0] <= BLOCK]
        wrapped = [o for o in self._open if o[0] == number - 1]
        # A progress bar redraws with \r: each redraw is its own line for matching, and only the last goes on in the
        # first of the next line.
        for part in text.split("\r") if "\r" in text else (text,):
            self.clues.line(part, number)
            for start, head, sig in wrapped:  # the rest of a message wrapped at a space or mid-word
                m = sig.pattern.search(head + " " + part) or sig.pattern.search(head + part)
                if m:
                    counted = _counting(counted, sig, self._add(sig, start, head + " " + part, m))
            wrapped, self._open = [], []
            known = False  # a known text matched this line: the general reader leaves it
            for sig in SIGNATURES:
                for context in (sig.not_after, sig.only_after):
                    if context is not None and context.search(part):
                        self._context[sig.id] = (number, _emitter(part))
                        self._released(sig)
                        counted = None
                if sig.anchor and sig.anchor in part:
                    m = sig.pattern.search(part)
                    if m:
                        key = self._add(sig, number, part, m)
                        known |= key is not None
                        counted = _counting(counted, sig, key)
                    else:
                        self._open.append((number, part, sig))
            self.reader.line(part, number, known)
        return counted

    def _released(self, sig: Signature) -> None:
        """The context line of sig: the matches waiting for it (within BLOCK lines before) are added."""
        now = [w for w in self._waiting if w[2] is sig]
        self._waiting = [w for w in self._waiting if w[2] is not sig]
        for start, text, _, m in now:
            self._add(sig, start, text, m)

    def _add(self, sig: Signature, number: int, text: str, m) -> tuple[str, Cause] | None:
        """The match counted under its (signature, cause), returned; None where it waits for its context line."""
        cause: Cause = sig.cause
        reason = ""
        seen, emitter = self._context.get(sig.id, (0, ""))
        if sig.only_after is not None and not (seen and number - seen <= BLOCK):
            if len(self._waiting) < WAITING:  # without the line that makes it this (a bare OSError is
                self._waiting.append((number, text, sig, m))  # anything): it may follow
            return None
        self.reader.known(number)
        if sig.not_after is not None and seen and number - seen <= BLOCK and emitter == _emitter(text):
            cause, reason = "not-shm", f"a line just before says {sig.not_after.pattern!r}: a failed registration"
        try:
            needed = sig.needed(m) if sig.needed else None
            had = sig.had(m) if sig.had else None
        except Implausible as e:
            needed, had, reason = None, None, "; ".join(filter(None, (reason, str(e))))
        first = self.found.get((sig.id, cause))
        if first is None:
            self.found[(sig.id, cause)] = Diagnosis(
                sig.id, cause, sig.consumer, number, excerpt(text, m.start()), needed, reason, shm_bytes=had
            )
            if sig.consumer in NAMED_BY_BLOCK and cause in NAMED_CAUSES or sig.ambiguous and cause == "shm-space":
                self.reader.name((sig.id, cause), number)
        else:
            most = max(filter(None, (first.bytes_needed, needed)), default=None)
            self.found[(sig.id, cause)] = replace(first, count=first.count + 1, bytes_needed=most)
        return (sig.id, cause)

    def diagnoses(self) -> tuple[Diagnosis, ...]:
        """In the order of the log, less the signatures a more specific one in the same log supersedes."""
        present = {sig_id for sig_id, _ in self.found}
        readings, blocks = self.reader.readings()
        kept = [
            _placed(_named(d, blocks.get(key)), blocks.get(key))
            for key, d in self.found.items()
            if not present.intersection(BY_ID[d.signature].superseded_by)
        ]
        kept += self._readings(kept, readings)
        return tuple(sorted(kept, key=lambda d: (d.line, d.signature)))

    @staticmethod
    def _readings(known: list[Diagnosis], readings) -> list[Diagnosis]:
        """The general reader's findings a known text of the log does not already say: none of a cause a certain
        known text gives, no full df where /dev/shm is said to run out, no browser's crash where a known text
        names the browser."""
        certain = {d.cause for d in known if not BY_ID[d.signature].ambiguous}
        consumers = {d.consumer for d in known}
        out: list[Diagnosis] = []
        for r, count in readings:
            sig = BY_ID[r.event.id]
            if sig.cause in certain or (sig.consumer != "unknown" and sig.consumer in consumers):
                continue
            m = r.event.pattern.search(r.text)
            read = Diagnosis(
                sig.id,
                sig.cause,
                r.consumer(),
                r.line,
                excerpt(r.text, m.start() if m else 0),
                count=count,
                found_by="reader",
                evidence=r.evidence(),
            )
            out.append(_placed(read, r))
        if any(d.cause == "shm-space" and d.signature != DF.id for d in (*known, *out)):
            out = [d for d in out if d.signature != DF.id]
        return out


def _named(d: Diagnosis, block: Reading | None) -> Diagnosis:
    """A known text that does not say its consumer, named by its block."""
    best = named_by(block.seen) if block is not None and d.consumer in NAMED_BY_BLOCK else None
    if best is None:
        return d
    number, context = best
    better = NAMED_BY_BLOCK[d.consumer]
    if better is not None and context.consumer not in better:
        return d
    return replace(d, consumer=context.consumer or d.consumer, evidence=f"{context.what} (line {number}) names who")


def _placed(d: Diagnosis, block: Reading | None) -> Diagnosis:
    """A bus error or a crash (ambiguous, shm-space) whose block puts it off /dev/shm: not shared memory, with why."""
    if block is None or d.cause != "shm-space" or not BY_ID[d.signature].ambiguous:
        return d
    found = block.elsewhere(d.consumer)
    if found is None:
        return d
    number, context = found
    return replace(d, cause="not-shm", reason=f"{context.what} (line {number}): {context.why}")


def scan_text(text: str | bytes) -> Scanner:
    """A log already in memory (run's ring, a test's case), line by line."""
    scanner = Scanner()
    # \r is not a line end (grep -n)
    lines: Sequence[str | bytes] = text.split("\n") if isinstance(text, str) else text.split(b"\n")
    keys = Prefilter(anchors())
    after = False  # the line after a candidate: the rest of a wrapped message
    for number, raw in enumerate(lines, 1):
        probe = raw if isinstance(raw, str) else raw[:MAX_LINE].decode("utf-8", "replace")
        candidate = keys.holds(probe.encode("utf-8", "replace"))
        if candidate or after:
            scanner.line(number, probe)
        after = candidate
    return scanner
