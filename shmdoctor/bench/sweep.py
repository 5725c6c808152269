"""The sweep: which configs run, when a config's per-batch time has settled, and which config to recommend.

Pure functions (the child imports `settled` too, so nothing heavy here).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .model import Config, Result

TOLERANCE = 0.05  # "within a few percent" of the best per-batch time
SETTLE = 0.05  # two consecutive windows whose mean per-batch times differ by at most this share...
SETTLE_FLOOR = 0.0005  # ...or by at most half a millisecond (tiny batches jitter more than 5%)
MIN_WINDOW = 3


def configs(
    workers: Sequence[int],
    prefetch: Sequence[int],
    pin: Sequence[bool],
    non_blocking: Sequence[bool],
    pin_device: Sequence[str | None] = (None,),
) -> list[Config]:
    """The product of the lists, in the order given; num_workers=0 takes no prefetch_factor and pin_memory=false no
    pin_memory_device (None: not passed), so each such config runs once."""
    out: list[Config] = []
    for w, p, pm, nb, d in itertools.product(workers, prefetch, pin, non_blocking, pin_device):
        c = Config(w, p if w else None, pm, nb, pin_memory_device=d if pm else None)
        if c not in out:
            out.append(c)
    return out


def window(num_workers: int) -> int:
    """Batches per window: a whole number of worker rounds (workers hand batches over in turn), at least 3."""
    return max(MIN_WINDOW, num_workers * math.ceil(MIN_WINDOW / num_workers)) if num_workers else MIN_WINDOW


def settled(times: Sequence[float], num_workers: int, waits: Sequence[float] = ()) -> bool:
    """Whether the per-batch times have settled: the last two windows agree within SETTLE (or SETTLE_FLOOR); within
    twice SETTLE where, with workers, the loop waited for data in neither (`waits`: each batch's wait): recommend()
    compares such loops at twice its tolerance (at_knee). On a loaded machine their noise is all there is to time:
    at a load of 11, 4 workers of the seed's loop took 23 batches to agree within 5%."""
    k = window(num_workers)
    if len(times) < 2 * k:
        return False
    before, last = sum(times[-2 * k : -k]) / k, sum(times[-k:]) / k
    own_pace = (
        num_workers > 0
        and len(waits) >= 2 * k
        and not _waited(sum(waits[-2 * k : -k]) / k, before)
        and not _waited(sum(waits[-k:]) / k, last)
    )
    return abs(before - last) <= max((2 if own_pace else 1) * SETTLE * max(before, last), SETTLE_FLOOR)


@dataclass(frozen=True)
class Recommendation:
    choice: Result  # the fewest workers (then settings) within TOLERANCE of the fastest config that fits
    best_fit: Result  # the fastest config that fits the shared memory available
    best: Result  # the fastest config measured; may need more shared memory than is available
    capacity: int | None  # /dev/shm a loader can take here (free space capped by the memory limit)
    tolerance: float = TOLERANCE
    alike: tuple[Result, ...] = ()  # the other configs that ran with as many workers, within noise of the choice

    @property
    def best_fits(self) -> bool:
        return self.best is self.best_fit or fits(self.best, self.capacity)


def fits(result: Result, capacity: int | None) -> bool:
    return capacity is None or result.predicted_shm_bytes <= capacity


def _seconds(result: Result) -> float:
    """Seconds per batch; an untimed result (none is, once filtered) would sort last."""
    return result.batch_seconds if result.batch_seconds is not None else math.inf


WAIT_FLOOR = 0.002  # seconds a batch: a loop waiting less than this (or WAIT_SHARE of its batch) does not wait
WAIT_SHARE = 0.05


def waits(result: Result) -> bool:
    """Whether the loop waited for data: if not, more workers cannot make it faster."""
    return _waited(result.data_wait_seconds or 0.0, result.batch_seconds or 0.0)


def _waited(wait: float, batch: float) -> bool:
    """A mean wait for data that counts, beside the mean batch time it is part of."""
    return wait > max(WAIT_FLOOR, WAIT_SHARE * batch)


def at_knee(result: Result, best: float, tolerance: float = TOLERANCE) -> bool:
    """Within `tolerance` of the fastest; or a loop that no longer waits for data within twice that (on a busy
    machine the noise between two step-bound configs reaches 7%: neither is faster for its workers)."""
    if result.status != "ok" or not result.batch_seconds:
        return False
    t = _seconds(result)
    return t <= best * (1 + tolerance) or (not waits(result) and t <= best * (1 + 2 * tolerance))


def recommend(results: Sequence[Result], capacity: int | None, tolerance: float = TOLERANCE) -> Recommendation | None:
    """The fewest workers at the knee (at_knee) of the fastest config that ran and fits, without pin_memory_device
    when a config at the knee does without it; None when none did."""
    timed = [r for r in results if r.status == "ok" and r.batch_seconds]
    fitting = [r for r in timed if fits(r, capacity)]
    if not fitting:
        return None
    best_fit = min(fitting, key=_seconds)
    near = [r for r in fitting if at_knee(r, _seconds(best_fit), tolerance)]
    # Fewer settings: at equal workers, a config at the knee without pin_memory_device wins over any with it.
    choice = min(near, key=lambda r: (r.config.num_workers, r.config.pin_memory_device is not None, _seconds(r)))
    best = min(timed, key=_seconds)
    # Within noise: the same workers and a time within the tolerance of the choice's; a second run may swap them.
    alike = tuple(
        r
        for r in fitting
        if r is not choice
        and r.config.num_workers == choice.config.num_workers
        and _seconds(r) <= _seconds(choice) * (1 + tolerance)
    )
    return Recommendation(choice, best_fit, best, capacity, tolerance, alike)
