"""One total deadline for a conversation with something outside (an engine): a socket timeout bounds each read,
not their sum, so an engine that trickles a byte every 10 s, or an ssh host that accepts and says nothing, would
keep a command waiting forever. Work runs in daemon threads, so that what is still stuck at the deadline never
holds the process back from exiting."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from ..errors import ProbeError

T = TypeVar("T")
R = TypeVar("R")


def within(seconds: float, what: str, work: Callable[[], T], abort: Callable[[], None]) -> T:
    """work()'s result or exception, if it comes within `seconds`. Past them, or on Ctrl-C meanwhile, abort() (which
    ends what work may have started: processes) and ProbeError (exit 3) naming `what` and the deadline."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except BaseException as e:  # handed to the caller's thread, whatever it is
            outcome["error"] = e

    thread = threading.Thread(target=run, name="shmdoctor-deadline", daemon=True)
    thread.start()
    try:
        thread.join(seconds)
    except BaseException:  # KeyboardInterrupt: end what work started, then say it was interrupted
        abort()
        raise
    if thread.is_alive():
        abort()
        raise ProbeError(f"{what} did not answer within {seconds:g} s (--timeout)")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["result"]  # type: ignore[return-value]


def concurrently(fn: Callable[[T], R], items: list[T], workers: int) -> list[R]:
    """[fn(item) for item in items], `workers` at a time, in daemon threads (a thread pool's workers are joined at
    exit: one stuck on a silent socket would hang it); the first exception is raised once all have ended."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    results: list = [None] * len(items)
    errors: list[BaseException] = []
    pending = iter(enumerate(items))
    lock = threading.Lock()

    def worker() -> None:
        while not errors:
            with lock:
                index, item = next(pending, (-1, None))
            if index < 0:
                return
            try:
                results[index] = fn(item)  # type: ignore[arg-type]
            except BaseException as e:
                errors.append(e)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
