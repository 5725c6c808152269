"""Ctrl-C and SIGTERM during a bench: one stop, raised once where the sweep is, whatever else arrives while the
run cleans up (a second and third Ctrl-C, `timeout` following up with SIGTERM) is noted and ignored, so the cleanup
finishes and no traceback is printed."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """The sweep was stopped by a signal. Exit 128 + the signal: 130 for Ctrl-C, 143 for SIGTERM (as a shell says)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum
        self.word = "interrupted" if signum == signal.SIGINT else "terminated"


_stopped: list[int] = []  # the signal that stopped the sweep, once one did


def pending() -> None:
    """Raise Stopped again when a signal came but its Stopped never reached the sweep: raised inside code that
    swallows what it catches (an import that catches BaseException, say). Called where the sweep waits, not where it
    cleans up: a Stopped that propagated is in cleanup or handled by then."""
    if _stopped:
        raise Stopped(_stopped[0])


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise Stopped the first time, nothing after; the previous handlers come back at the end,
    unless a stop came: then the command only prints what ended and exits, and more signals are ignored till then
    (Ctrl-C pressed three times lands its last press after the sweep, while the results print)."""
    _stopped.clear()

    def handler(signum: int, frame: object) -> None:
        if not _stopped:
            _stopped.append(signum)
            raise Stopped(signum)

    previous = {}
    try:
        for s in SIGNALS:  # a signal between the two installs is a Stopped too: the first handler is in place
            previous[s] = signal.signal(s, handler)
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, signal.SIG_IGN if _stopped else h)
