"""Which configs a sweep runs, in what order, and which it skips, with the reason (pure: results in, configs out).

An explicit list of workers (`0,1,2,4`) is walked upwards, and the walk stops once the loop no longer waits for data
and the last step did not pay: more workers cannot make such a loop faster, only take more /dev/shm and memory. A range
(`0..32`, `0:32`) is searched for its knee, the fewest workers at which the loop stops waiting (or is within the
tolerance of the fastest): each run narrows a bracket (below it: waits; at it: the knee), and the next config is the
knee a model of the loop predicts from what ran, T(w) = max(S, L/w) a batch with S the loop's own time a batch and L a
worker's time to load one; bisection where the model cannot say or has missed too often. The model picks, the runs
decide: the knee is always a config measured at it, next to one measured below it. Only one group of settings is
walked or searched, the lead: the seed's pinned, non-blocking copies where the grid has them (else the first group
given); every other group (the other pin_memory / non_blocking pairs, persistent workers, a pin_memory_device, another
prefetch_factor) is timed only at the lead's knee and the config measured below it, where the recommendation is made.
A config predicted not to fit the /dev/shm available is skipped, except the smallest such one, run to confirm the
failure the prediction claims (`run_failing` runs them all). `exhaustive` runs every config in the order given.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..sizes import format_size
from .model import Config, Result
from .sweep import TOLERANCE, at_knee, waits

PROBE = 3  # a search's first config: below the knee a run costs about three batch loads whatever its workers, above
# it a settle window grows with each worker, so a few workers is the cheap first look
MODEL_RUNS = 4  # runs in a group after which the bracket is halved, not modelled (a model that kept missing)


def knee(results: Iterable[Result], tolerance: float = TOLERANCE) -> int | None:
    """The fewest workers the loop's model puts within `tolerance` of its floor: T(w) = max(S, L/w), S = the loop's
    own time a batch (the batch less the wait), L = one worker's time to load a batch. L is read from the loop that
    waited with the most workers (it then gets a batch each L/w), else from num_workers=0 (its wait is the load),
    else from the first batch (every worker loads its first at once). None when nothing ran usefully."""
    runs = [(r, t, r.data_wait_seconds) for r in results if (t := timed(r)) and r.data_wait_seconds is not None]
    if not runs:
        return None
    own = sorted(t - wait for _, t, wait in runs)
    step = own[len(own) // 2]
    waited = [(r.config.num_workers, t) for r, t, _ in runs if r.config.num_workers and waits(r)]
    alone = [wait for r, _, wait in runs if not r.config.num_workers]
    firsts = [
        r.first_batch_seconds - (r.worker_startup_seconds or 0.0)
        for r, _, _ in runs
        if r.config.num_workers and r.first_batch_seconds is not None
    ]
    if waited:
        workers, t = max(waited)
        load = workers * t
    elif alone or firsts:
        load = alone[0] if alone else max(firsts)
    else:
        return None
    return max(1, math.ceil(load / ((1 + tolerance) * step) - 1e-9)) if step > 0 else None


def timed(result: Result | None) -> float | None:
    return result.batch_seconds if result is not None and result.status == "ok" else None


def _group(config: Config) -> tuple:
    """Everything but the workers: each group's workers are walked or searched apart."""
    return (
        config.prefetch_factor,
        config.pin_memory,
        config.non_blocking,
        config.persistent_workers,
        config.pin_memory_device,
    )


def _member(config: Config, key: tuple) -> bool:
    """num_workers=0 has no prefetch_factor nor persistent workers: it belongs to every group of its pin_memory,
    non_blocking and pin_memory_device."""
    if config.num_workers == 0:
        return (config.pin_memory, config.non_blocking, config.pin_memory_device) == (key[1], key[2], key[4])
    return _group(config) == key


def _seed_first(key: tuple) -> tuple:
    """The lead group first: pinned, non-blocking copies (the seed's), without persistent workers or a
    pin_memory_device; among equals, the first given (min() keeps it)."""
    _, pin, non_blocking, persistent, device = key
    return (not pin, not non_blocking, persistent, device is not None)


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
        keys = list(dict.fromkeys(_group(c) for c in self.configs if c.num_workers)) or list(
            dict.fromkeys(map(_group, self.configs))
        )
        lead = min(keys, key=_seed_first)
        group = self._members(lead)
        nxt = self._search(group) if self.search else self._walk(group)
        if nxt is not None:
            return nxt
        at = self._knee(group)
        for key in keys:
            if key == lead:
                continue
            group = self._members(key)
            if at is None:  # nothing of the lead's was timed: no knee to go by, each group is walked or searched
                nxt = self._search(group) if self.search else self._walk(group)
            else:
                nxt = self._at_knee(group, at, lead)
            if nxt is not None:
                return nxt
        return None

    def _at_knee(self, group: list[Config], at: tuple[Result, Result | None], lead: tuple) -> Config | None:
        """A group other than the lead's: its config at the lead's knee; and the one below, only where it measured
        faster than the lead there (its copies, not the loading, are what the settings change: a group no faster at
        the knee cannot be at it with fewer workers)."""
        knee_, below = at
        mine = {c.num_workers: c for c in group}
        here = mine.get(knee_.config.num_workers)
        if here is not None and here not in self.results:
            return here
        t, lead_t = timed(self.results.get(here) if here else None), timed(knee_)
        faster = t is not None and lead_t is not None and t < lead_t * (1 - self.tolerance)
        lower = mine.get(below.config.num_workers) if below is not None and faster else None
        if lower is not None and lower not in self.results:
            return lower
        for c in group:
            if c not in self.results:
                self.reasons.setdefault(c, self._elsewhere(lead, knee_.config.num_workers))
        return None

    def _members(self, key: tuple) -> list[Config]:
        """The group's configs that may run, by workers."""
        return sorted(
            (c for c in self.configs if _member(c, key) and c not in self.reasons and c != self._confirming),
            key=lambda c: c.num_workers,
        )

    def _knee(self, group: list[Config]) -> tuple[Result, Result | None] | None:
        """The lead's run at the knee (the fewest workers there), and its run with the most workers below it; None
        when none of its configs was timed."""
        runs = [r for c in group if (r := self.results.get(c)) is not None and timed(r) is not None]
        if not runs:
            return None
        best = min(t for r in runs if (t := timed(r)) is not None)
        knee_ = min((r for r in runs if at_knee(r, best, self.tolerance)), key=lambda r: r.config.num_workers)
        below = [r for r in runs if r.config.num_workers < knee_.config.num_workers]
        return knee_, max(below, key=lambda r: r.config.num_workers) if below else None

    @staticmethod
    def _elsewhere(lead: tuple, workers: int) -> str:
        prefetch, pin, non_blocking, persistent, device = lead
        settings = f"pin_memory={str(pin).lower()}, non_blocking={str(non_blocking).lower()}"
        settings += f", prefetch_factor={prefetch}" if prefetch else ""
        settings += ", persistent_workers=true" if persistent else ""
        settings += f", pin_memory_device={device}" if device else ""
        return (
            f"the knee was searched with {settings}: num_workers={workers}; other settings are timed at it (and below "
            "it where they were faster there)"
        )

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

    def _search(self, group: list[Config]) -> Config | None:
        if not group:
            return None
        runs = {i: self.results[c] for i, c in enumerate(group) if c in self.results}
        times = [t for t in map(timed, runs.values()) if t is not None]
        # The floor is known once a loop ran without waiting, or waited as long with more workers (it waits on
        # something workers do not add: cores, a disk), or the most workers ran: the knee is then bracketed.
        waited = [(i, t) for i, r in runs.items() if (t := timed(r)) is not None and waits(r)]
        floored = (
            len(group) - 1 in runs
            or any(timed(r) is not None and not waits(r) for r in runs.values())
            or any(later >= t * (1 - self.tolerance) for (_, t), (_, later) in itertools.pairwise(waited))
        )
        if not floored:  # all that ran waited: go where the model puts the knee, above them; else to the top
            above = max(runs, default=-1)
            want = knee(runs.values(), self.tolerance) if runs else PROBE
            return next((c for c in group[above + 1 :] if want is not None and c.num_workers >= want), group[-1])
        if not times:  # even the most workers failed: walk the rest from the bottom instead
            return self._walk(group)
        best = min(times)
        hi = min(i for i, r in runs.items() if at_knee(r, best, self.tolerance))
        lo = max((i for i in runs if i < hi), default=-1)  # every run below hi is below the knee
        if hi - lo > 1:
            want = knee(runs.values(), self.tolerance) if len(runs) <= MODEL_RUNS else None
            if want is None:
                return group[(lo + hi) // 2]
            inside = [i for i in range(lo + 1, hi) if group[i].num_workers >= want]
            return group[inside[0] if inside else hi - 1]  # the model's knee, or just below the one measured
        at, below = group[hi], group[lo] if lo >= 0 else None
        for c in group:
            if c not in self.results:
                self.reasons.setdefault(
                    c,
                    f"searched: num_workers={at.num_workers} is the fewest at the knee (no longer waiting for data, "
                    f"or within {self.tolerance:.0%} of the fastest)"
                    + (f", num_workers={below.num_workers} below it" if below else "")
                    + f"; {len(runs)} configs of {len(group)} run to find it",
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
