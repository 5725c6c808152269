"""The loader settings that fit today, each knob turned down alone: expected values by the arithmetic in the comments
(the need is (prefetch·workers + 1 unless pinned) × batch × ranks; what fits is 80% of the free /dev/shm)."""

from __future__ import annotations

from shmdoctor import fixes
from shmdoctor.loader import loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.sizes import MiB


def _fits(shm: int, **loader) -> list[dict[str, int]]:
    facts = Facts(Target("local", "t"), Shm(True, shm, 0, shm, "docker-shm"), Ipc("private"), Memory(None, 0))
    return [fix.loader for fix in fixes.fit_today(requirement(loader_config(**loader)), facts)]  # type: ignore[misc]


def test_each_knob_down_to_the_largest_that_fits():
    # 64 MiB: 53,687,091 B usable, room for 53,687,091 // 4 MiB - 1 = 11 batches beside the held one.
    # workers: 2·5 + 1 = 11 batches (44 MiB) fit, 2·6 + 1 = 13 do not; prefetch 1: 8 + 1 = 9 fit;
    # batch_size: 17 batches of 3 MiB (51 MiB) fit in 51.2 MiB, of 4 MiB do not.
    loader = dict(batch_size=4, num_workers=8, prefetch_factor=2, sample_bytes=MiB)
    assert _fits(64 * MiB, **loader) == [{"num_workers": 5}, {"prefetch_factor": 1}, {"batch_size": 3}]


def test_pinned_batches_hold_none_and_ranks_multiply():
    # 16 MiB: 13,421,772 B usable over 2 ranks of 1 MiB batches: 6 batches a rank, none held (pinned).
    # workers: 2·3 = 6 fit; prefetch 1: 4 fit; batch_size: 8 batches × 2 ranks of a page-floored 0.8 MiB is 0 samples.
    loader = dict(batch_size=1, num_workers=4, prefetch_factor=2, sample_bytes=MiB, pin_memory=True, ranks=2)
    assert _fits(16 * MiB, **loader) == [{"num_workers": 3}, {"prefetch_factor": 1}]


def test_where_no_knob_fits_the_loader_runs_in_its_process():
    # 4 MiB: 3,355,443 B usable, less than one 4 MiB batch; one worker cannot go lower but to none.
    assert _fits(4 * MiB, batch_size=4, num_workers=1, batch_bytes=4 * MiB) == [{"num_workers": 0}]
