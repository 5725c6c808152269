"""The sweep's pure parts: which configs run, when per-batch time has settled, which config is recommended."""

from dataclasses import replace

import pytest

from shmdoctor.bench.model import Config, Result
from shmdoctor.bench.sweep import configs, recommend, settled, window
from shmdoctor.sizes import MiB

B = 100 * MiB  # the seed's batch


def result(w, seconds, status="ok", pin=False, nb=False, p=2):
    need = 0 if w == 0 else (p * w + (0 if pin else 1)) * B
    return Result(Config(w, p if w else None, pin, nb), status, need, batch_seconds=seconds if status == "ok" else None)


def test_configs_run_workers_0_once_and_keep_the_order():
    got = configs([0, 2], [2, 4], [True, False], [True])
    assert got == [
        Config(0, None, True, True),
        Config(0, None, False, True),
        Config(2, 2, True, True),
        Config(2, 2, False, True),
        Config(2, 4, True, True),
        Config(2, 4, False, True),
    ]


def test_windows_are_whole_worker_rounds():
    assert [window(w) for w in (0, 1, 2, 3, 4, 5, 8)] == [3, 3, 4, 3, 4, 5, 8]


@pytest.mark.parametrize(
    "times, workers, expected",
    [
        ([0.2] * 5, 0, False),  # fewer than two windows
        ([0.2] * 6, 0, True),
        ([0.5, 0.2, 0.2, 0.2, 0.2, 0.2], 0, False),  # the prefetched batches drain first
        ([0.1, 0.4] * 4, 2, True),  # two workers hand over in turn: whole rounds agree
        ([0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3, 0.3], 4, False),
        ([0.001, 0.0012, 0.001, 0.0013, 0.001, 0.0011], 0, True),  # under the half-millisecond floor
    ],
)
def test_settled(times, workers, expected):
    assert settled(times, workers) is expected


NOISY = [0.2, 0.22, 0.2, 0.22, 0.2, 0.24]  # 3 workers: windows of 3 average 0.2067 and 0.22 s, 6% apart


@pytest.mark.parametrize(
    "times, waits, workers, expected",
    [
        (NOISY, [0.0] * 6, 3, True),  # no wait in either window: within twice SETTLE (10%) will do
        (NOISY, [0.001, 0.002, 0.0, 0.0, 0.003, 0.001], 3, True),  # 1 ms a batch: under WAIT_FLOOR (2 ms)
        (NOISY, [0.0, 0.05, 0.0, 0.0, 0.0, 0.0], 3, False),  # 17 ms a batch in the first window: over 5% of 0.207 s
        (NOISY, [0.0, 0.0, 0.0, 0.0, 0.0, 0.06], 3, False),  # 20 ms in the last: over 5% of 0.22 s
        (NOISY, [0.0] * 5, 3, False),  # not two windows of waits
        (NOISY, [0.0] * 6, 0, False),  # without workers the loop loads its own batches
        (NOISY, (), 3, False),  # times alone: 6% apart
        ([0.2, 0.2, 0.2, 0.25, 0.25, 0.25], [0.0] * 6, 3, False),  # 0.2 and 0.25 s: 20% apart, even so
    ],
)
def test_a_loop_that_waits_in_neither_window_settles_within_twice_the_share(times, waits, workers, expected):
    assert settled(times, workers, waits) is expected


SEED_SWEEP = [result(0, 0.734), result(1, 0.566), result(2, 0.282), result(3, 0.202), result(4, 0.203)]


def test_the_seed_sweep_recommends_3_workers():
    rec = recommend(SEED_SWEEP, capacity=None)
    assert rec.choice.config.num_workers == 3 and rec.best_fit.config.num_workers == 3 and rec.best_fits


def test_fewest_workers_within_a_few_percent_of_the_best():
    rec = recommend([result(2, 0.30), result(4, 0.206), result(8, 0.200)], capacity=None)
    assert rec.choice.config.num_workers == 4 and rec.best_fit.config.num_workers == 8


def test_only_configs_that_fit_are_recommended_and_the_best_says_what_it_needs():
    # 1100 MiB available: 4 workers (900 MiB) fit, 8 (1700 MiB) ran (loading-bound) but do not fit
    rec = recommend([result(2, 0.30), result(4, 0.25), result(8, 0.20)], capacity=1100 * MiB)
    assert rec.choice.config.num_workers == 4
    assert rec.best.config.num_workers == 8 and not rec.best_fits


def test_failed_configs_are_never_recommended():
    rec = recommend(
        [result(0, 0.9), result(2, None, status="shm-exhausted"), result(4, None, status="error")], capacity=64 * MiB
    )
    assert rec.choice.config.num_workers == 0


def test_no_recommendation_when_nothing_ran():
    assert recommend([result(2, None, status="shm-exhausted")], capacity=64 * MiB) is None


def test_pin_memory_breaks_ties_by_speed_at_equal_workers():
    rec = recommend([result(3, 0.228), result(3, 0.202, pin=True, nb=True), result(4, 0.203, pin=True)], None)
    assert rec.choice.config == Config(3, 2, True, True)


def test_peak_ratio_leaves_the_iterators_own_pages_out():
    r = Result(Config(2, 2, False, False), "ok", 5 * B, peak_shm_bytes=5 * B + 57344, loader_overhead_bytes=57344)
    assert r.peak_ratio == 1.0
    assert Result(Config(0, None, False, False), "ok", 0, peak_shm_bytes=0).peak_ratio is None


def test_pin_memory_device_goes_only_with_pin_memory_and_runs_once_without():
    got = configs([0, 2], [2], [True, False], [True], [None, "cuda"])
    assert got == [
        Config(0, None, True, True),
        Config(0, None, True, True, pin_memory_device="cuda"),
        Config(0, None, False, True),  # pin_memory=false takes no device: once, not twice
        Config(2, 2, True, True),
        Config(2, 2, True, True, pin_memory_device="cuda"),
        Config(2, 2, False, True),
    ]
    assert configs([2], [2], [True], [True]) == [Config(2, 2, True, True)]  # not swept: never passed


def test_a_config_is_labelled_with_its_pin_memory_device_only_when_it_passes_one():
    assert Config(2, 2, True, True).label() == "num_workers=2, prefetch_factor=2, pin_memory=true, non_blocking=true"
    assert (
        Config(2, 2, True, True, pin_memory_device="cuda:1")
        .label()
        .endswith("pin_memory=true, non_blocking=true, pin_memory_device=cuda:1")
    )


def with_device(r: Result, seconds: float) -> Result:
    return Result(replace(r.config, pin_memory_device="cuda"), "ok", r.predicted_shm_bytes, batch_seconds=seconds)


def test_pin_memory_device_is_never_recommended_when_the_same_config_without_it_is_within_tolerance():
    bare = result(3, 0.204, pin=True)
    rec = recommend([result(2, 0.290, pin=True), bare, with_device(bare, 0.200), result(4, 0.203, pin=True)], None)
    assert rec.best_fit.config.pin_memory_device == "cuda"  # the fastest passes it, 2% ahead: noise
    assert rec.choice is bare


def test_pin_memory_device_is_recommended_when_it_measurably_pays():
    bare = result(3, 0.240, pin=True)
    rec = recommend([bare, with_device(bare, 0.200)], None)
    assert rec.choice.config == Config(3, 2, True, False, pin_memory_device="cuda")
