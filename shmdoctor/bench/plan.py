"""Which configs a sweep runs, in what order, and which it skips, with the reason (pure: results in, configs out).

An explicit list of workers (`0,1,2,4`) is walked upwards, and the walk stops once the loop no longer waits for data
and the last step did not pay: more workers cannot make such a loop faster, only take more /dev/shm and memory. A range
(`0..32`, `0:32`) is searched: its largest worker count that fits is run first (the loop at its fastest), then the
fewest workers within the tolerance of it are found by bisection, assuming what the seed and every run here show, a
per-batch time that falls with workers until the loop stops waiting and is flat after. A config predicted not to fit
the /dev/shm available is skipped, except the smallest such one, run to confirm the failure the prediction claims
(`run_failing` runs them all). `exhaustive` runs every config in the order given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..sizes import format_size
from .model import Config, Result
from .sweep import TOLERANCE, at_knee, waits


def timed(result: Result | None) -> float | None:
    return result.batch_seconds if result is not None and result.status == "ok" else None


def _group(config: Config) -> tuple:
    """Everything but the workers: each group's workers are walked or searched apart."""
    return (config.prefetch_factor, config.pin_memory, config.non_blocking, config.persistent_workers)


def _member(config: Config, key: tuple) -> bool:
    """num_workers=0 has no prefetch_factor nor persistent workers: it belongs to every group of its pin_memory and
    non_blocking."""
    if config.num_workers == 0:
        return (config.pin_memory, config.non_blocking) == key[1:3]
    return _group(config) == key


@dataclass
class Plan:
    configs: Sequence[Config]  # the grid, in the order given
    search: bool = False  # the workers were a range: bisect, do not walk
    exhaustive: bool = False
    need: Callable[[Config], int] = lambda c: 0  # predicted /dev/shm
    capacity: int | None = None  # /dev/shm a loader can take here; None: unknown (everything fits)
    run_failing: bool = False
    tolerance: float = TOLERANCE
    results: dict[Config, Result] = field(default_factory=dict)
    reasons: dict[Config, str] = field(default_factory=dict)  # why a config was skipped
    _confirming: Config | None = None

    def __post_init__(self) -> None:
        if self.exhaustive or self.run_failing or self.capacity is None:
            return
        unfit = [c for c in self.configs if self.need(c) > self.capacity]
        if unfit:
            self._confirming = min(unfit, key=lambda c: (self.need(c), self.configs.index(c)))
        for c in unfit:
            if c != self._confirming:
                self.reasons[c] = (
                    f"predicted to need {format_size(self.need(c))} of /dev/shm, {format_size(self.capacity)} "
                    f"available: not run (the smallest such config was run to confirm; --run-failing runs all)"
                )

    def record(self, result: Result) -> None:
        self.results[result.config] = result

    def next(self) -> Config | None:
        """The next config to run, or None when the sweep is done."""
        if self.exhaustive:
            return next((c for c in self.configs if c not in self.results), None)
        if self._confirming is not None and self._confirming not in self.results:
            return self._confirming
        keys = dict.fromkeys(_group(c) for c in self.configs if c.num_workers) or dict.fromkeys(
            map(_group, self.configs)
        )
        for key in keys:
            group = sorted(
                (c for c in self.configs if _member(c, key) and c not in self.reasons and c != self._confirming),
                key=lambda c: c.num_workers,
            )
            nxt = self._bisect(group) if self.search else self._walk(group)
            if nxt is not None:
                return nxt
        return None

    def _walk(self, group: list[Config]) -> Config | None:
        previous: Result | None = None
        for i, c in enumerate(group):
            r = self.results.get(c)
            if r is None:
                return c
            before, now = timed(previous), timed(r)
            if previous is not None and now is not None and not waits(r):
                paid = before is None or now < before * (1 - self.tolerance)
                if not paid:
                    for rest in group[i + 1 :]:
                        self.reasons.setdefault(
                            rest,
                            f"the loop no longer waited for data at num_workers={c.num_workers}, which was no "
                            f"faster than num_workers={previous.config.num_workers}: more workers only take more "
                            "/dev/shm and memory",
                        )
                    return None
            previous = r
        return None

    def _bisect(self, group: list[Config]) -> Config | None:
        if not group:
            return None
        top = self.results.get(group[-1])
        if top is None:
            return group[-1]
        runs = [t for t in map(timed, (self.results.get(c) for c in group)) if t is not None]
        if not runs:  # even the most workers failed: walk the rest from the bottom instead
            return self._walk(group)
        best = min(runs)
        lo, hi = -1, len(group) - 1  # lo: known slower than the tolerance (or failed); hi: known within it

        def within(c: Config) -> bool:
            return at_knee(self.results[c], best, self.tolerance)

        while hi - lo > 1:
            mid = (lo + hi) // 2
            c = group[mid]
            if c not in self.results:
                return c
            if within(c):
                hi = mid
            else:
                lo = mid
        knee = group[hi]
        for c in group:
            if c not in self.results:
                self.reasons.setdefault(
                    c,
                    f"searched: num_workers={knee.num_workers} is the fewest at the knee (within "
                    f"{self.tolerance:.0%} of the fastest, or no longer waiting for data), found by bisection",
                )
        return None

    def skipped(self, predicted: Callable[[Config], int]) -> list[Result]:
        """A Result of status "skipped" for every config not run, in the grid's order, each with its reason."""
        out = []
        for c in self.configs:
            if c not in self.results:
                why = self.reasons.get(c, "not reached: the sweep was stopped")
                out.append(Result(config=c, status="skipped", predicted_shm_bytes=predicted(c), message=why))
        return out


def with_persistence(configs: Sequence[Config], persistent: Sequence[bool]) -> list[Config]:
    """The grid times persistent_workers; num_workers=0 takes none (PyTorch refuses it), so it runs once."""
    out: list[Config] = []
    for c in configs:
        for p in persistent:
            d = replace(c, persistent_workers=p and c.num_workers > 0)
            if d not in out:
                out.append(d)
    return out
