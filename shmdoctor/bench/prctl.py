"""Linux's prctl(2), the two options the bench needs; elsewhere (or refused) they do nothing."""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value)


def on_parent_death(signum: int) -> None:
    """This process gets `signum` when its parent ends, however it ends."""
    _prctl(PR_SET_PDEATHSIG, signum)


@contextlib.contextmanager
def reaping_orphans() -> Iterator[None]:
    """While inside, this process adopts its descendants' orphans: the DataLoader workers of a config's child that
    ended come to us, so killing them is one waitpid, not a wait until the machine's init gets round to reaping them
    (seconds for some inits)."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        _prctl(PR_SET_CHILD_SUBREAPER, 0)
