"""The adaptive sweep's choices, on results shaped like the seed's (5 ms a sample, batch 100, a 0.2 s step)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest

from shmdoctor.bench.model import Config, Result
from shmdoctor.bench.plan import Plan, knee
from shmdoctor.bench.sweep import configs, recommend
from shmdoctor.sizes import MiB
from tests.helpers import REPO

B = 100 * MiB
# seconds a batch and waiting a batch by workers, as the seed's experiment measures them (H200, docs/gpu-bench.md)
SEED = {0: (0.739, 0.539), 1: (0.584, 0.383), 2: (0.291, 0.090), 3: (0.203, 0.0), 4: (0.208, 0.0)}
SEED.update(dict.fromkeys(range(5, 33), (0.205, 0.0)))


def config(w: int) -> Config:
    return Config(w, 2 if w else None, False, False)


def need(c: Config) -> int:
    return (2 * c.num_workers + 1) * B if c.num_workers else 0


def seed(c: Config) -> Result:
    """The seed's measured figures; a worker's first batch loads in 100 x 5 ms once the workers started (0.1 s)."""
    t, wait = SEED[c.num_workers]
    first = {"first_batch_seconds": 0.6, "worker_startup_seconds": 0.1} if c.num_workers else {}
    return Result(c, "ok", need(c), batch_seconds=t, data_wait_seconds=wait, **first)


def drive(plan: Plan, fail_over: int | None = None, loop=seed) -> list[int]:
    """Runs the plan against `loop`; configs needing more than fail_over run out of /dev/shm. The order run."""
    order = []
    while (c := plan.next()) is not None:
        order.append(c.num_workers)
        plan.record(Result(c, "shm-exhausted", need(c)) if fail_over is not None and need(c) > fail_over else loop(c))
    return order


def modelled(load: float, step: float, cores: int | None = None):
    """A loop as the DataLoader runs it: w workers deliver a batch each load/w seconds (no faster than `cores` of them
    can), the loop takes `step` of its own; num_workers=0 loads then steps."""

    def loop(c: Config) -> Result:
        w = c.num_workers
        t = load + step if not w else max(step, load / min(w, cores or w))
        first = (
            {"first_batch_seconds": 0.1 + load * max(1, w / (cores or w)), "worker_startup_seconds": 0.1} if w else {}
        )
        return Result(c, "ok", need(c), batch_seconds=t, data_wait_seconds=t - step, **first)

    return loop


def test_a_list_is_walked_until_the_loop_stops_waiting_and_more_workers_stop_paying():
    plan = Plan([config(w) for w in (0, 1, 2, 3, 4, 6, 8)])
    assert drive(plan) == [0, 1, 2, 3, 4]  # 3 no longer waits but paid; 4 neither waits nor pays: stop
    skipped = plan.skipped(need)
    assert [r.config.num_workers for r in skipped] == [6, 8] and {r.status for r in skipped} == {"skipped"}
    assert "no longer waited for data at num_workers=4, which was no faster than num_workers=3" in skipped[0].message


def test_a_range_is_searched_where_the_model_puts_the_knee():
    plan = Plan([config(w) for w in range(33)], search=True)
    order = drive(plan)
    assert order == [3, 2]  # 3 workers first: no longer waiting, and the model's knee; 2 below it waits
    skipped = plan.skipped(need)
    assert len(skipped) == 31
    assert all(r.message.startswith("searched: num_workers=3 is the fewest at the knee") for r in skipped)
    assert "num_workers=2 below it; 2 configs of 33 run to find it" in skipped[0].message


def test_without_a_first_batch_the_bracket_is_halved():
    def bare(c: Config) -> Result:
        t, wait = SEED[c.num_workers]
        return Result(c, "ok", need(c), batch_seconds=t, data_wait_seconds=wait)

    assert drive(Plan([config(w) for w in range(33)], search=True), loop=bare) == [3, 1, 2]


def test_the_model_reads_the_load_from_the_loop_that_waited_with_the_most_workers():
    results = [modelled(4.0, 0.2)(config(w)) for w in (2, 3)]
    assert knee(results) == 20  # 4 s a batch a worker over 0.2 s a step, within 5%: 4 / 0.21 -> 20
    assert knee([modelled(4.0, 0.2)(config(0))]) == 20  # num_workers=0 waits the whole load
    assert knee([modelled(0.5, 0.2)(config(8))]) == 3  # no wait at 8: the first batch's load, 0.5 s
    assert knee([Result(config(3), "error", 0)]) is None


@pytest.mark.parametrize(
    ("load", "step", "cores", "top"),
    [
        (load, step, cores, top)
        for load, step, cores, top in itertools.product((0.05, 0.5, 1.3, 4.0), (0.01, 0.2), (None, 2), (8, 32))
    ],
)
def test_the_search_recommends_what_the_whole_grid_does(load, step, cores, top):
    """The oracle: recommend() over every config of the grid, run; the search runs few of them to the same pick."""
    grid = [config(w) for w in range(top + 1)]
    loop = modelled(load, step, cores)
    everything = recommend([loop(c) for c in grid], None)
    plan = Plan(grid, search=True)
    order = drive(plan, loop=loop)
    searched = recommend([plan.results[c] for c in grid if c in plan.results], None)
    assert searched is not None and everything is not None
    assert searched.choice.config == everything.choice.config, order
    assert len(order) <= 7 if top == 32 else len(order) <= 5, order


def test_exhaustive_runs_the_grid_in_order():
    grid = [config(w) for w in (0, 1, 2, 3, 4, 6, 8)]
    assert drive(Plan(grid, exhaustive=True)) == [0, 1, 2, 3, 4, 6, 8]


def test_configs_predicted_not_to_fit_are_skipped_but_the_smallest_confirms_the_failure():
    grid = [config(w) for w in range(9)]
    capacity = 700 * MiB  # 3 workers (700 MiB) fit; 4 (900 MiB) and more do not
    plan = Plan(grid, need=need, capacity=capacity)
    order = drive(plan, fail_over=capacity)
    assert order[0] == 4 and not {5, 6, 7, 8} & set(order), order  # 4 confirms; 5-8 are not run
    reasons = {r.config.num_workers: r.message for r in plan.skipped(need)}
    assert all("predicted to need" in reasons[w] and "--run-failing" in reasons[w] for w in (5, 6, 7, 8))
    assert drive(Plan(grid, need=need, capacity=capacity, run_failing=True), fail_over=capacity)[-1] == 8


def test_pin_memory_device_is_timed_only_at_the_knee_of_the_configs_without_it():
    grid = configs([0, 1, 2, 3, 4, 6], [2], [True], [False], [None, "cuda"])
    plan = Plan(grid)
    order = drive(plan)
    assert order == [0, 1, 2, 3, 4, 3]  # the walk without it stops at 4 (knee 3); with it, 3 alone: as fast
    ran = [c for c in grid if c in plan.results]
    assert [c.pin_memory_device for c in ran if c.num_workers == 3] == [None, "cuda"]
    reasons = {(r.config.num_workers, r.config.pin_memory_device): r.message for r in plan.skipped(need)}
    assert reasons[(2, "cuda")].startswith(
        "the knee was searched with pin_memory=true, non_blocking=false, prefetch_factor=2: num_workers=3; other "
        "settings are timed at it"
    )


# A copy's cost a batch on top of the loop, by (pin_memory, non_blocking): what the settings change (not the load).
COPY = {(True, True): 0.0005, (True, False): 0.0021, (False, True): 0.011, (False, False): 0.011}


def paired(load: float, step: float, cores: int | None = None, copy=COPY):
    """modelled(), with each pin_memory / non_blocking pair's copy added to the loop's own time."""
    loop = modelled(load, step, cores)

    def run(c: Config) -> Result:
        r = loop(c)
        extra = copy[(c.pin_memory, c.non_blocking)]
        return replace(r, batch_seconds=r.batch_seconds + extra)

    return run


def cuda_grid(top: int) -> list[Config]:
    return configs(range(top + 1), [2], [True, False], [True, False])


def test_the_default_cuda_grid_searches_once_then_times_the_other_pairs_at_the_knee():
    grid = cuda_grid(8)
    plan = Plan(grid, search=True)
    order = drive(plan, loop=paired(0.5, 0.2))
    pairs = [(c.num_workers, c.pin_memory, c.non_blocking) for c in grid if c in plan.results]
    assert order == [3, 2, 3, 3, 3]  # the seed's pair searched (3, then 2 below it); each other pair at 3 alone
    assert sorted(pairs) == [(2, True, True), (3, False, False), (3, False, True), (3, True, False), (3, True, True)]
    assert len(plan.skipped(need)) == len(grid) - 5


def test_a_pair_faster_at_the_knee_is_timed_below_it_too():
    copy = {**COPY, (False, False): -0.1}  # unpinned, blocking: 0.1 s less a batch (a pin thread that cost the loop)
    plan = Plan(cuda_grid(8), search=True)
    order = drive(plan, loop=paired(0.5, 0.2, copy=copy))
    assert order == [3, 2, 3, 3, 3, 2]
    assert [c.num_workers for c in plan.results if (c.pin_memory, c.non_blocking) == (False, False)] == [3, 2]


@pytest.mark.parametrize(
    "load, step, cores, top",
    [
        (load, step, cores, top)
        for load, step, cores, top in itertools.product((0.05, 0.5, 1.3, 4.0), (0.01, 0.2), (None, 2), (8, 32))
    ],
)
def test_the_search_over_the_pairs_recommends_what_the_whole_grid_does(load, step, cores, top):
    """The oracle: recommend() over every config of the default CUDA grid (4 pairs), run; the search picks the same
    workers, and a pair as fast within the tolerance (said as within noise where not the same)."""
    grid = cuda_grid(top)
    loop = paired(load, step, cores)
    everything = recommend([loop(c) for c in grid], None)
    plan = Plan(grid, search=True)
    order = drive(plan, loop=loop)
    searched = recommend([plan.results[c] for c in grid if c in plan.results], None)
    assert searched is not None and everything is not None
    assert searched.choice.config.num_workers == everything.choice.config.num_workers, order
    pick, oracle = searched.choice.batch_seconds, everything.choice.batch_seconds
    assert pick is not None and oracle is not None and pick <= oracle * (1 + searched.tolerance), order
    assert len(order) <= (7 if top == 32 else 5) + 3, order  # one search, then the 3 other pairs at the knee


def test_on_the_h200s_measured_grid_the_search_picks_what_all_of_it_does_and_says_what_is_noise():
    """The H200's 20 configs (docs/gpu-bench/bench-seed-workers.json: workers 0-4, the 4 pairs), replayed: the
    search runs 5 and recommends what the whole grid does; the other pinned pair at 3 workers is within noise."""
    doc = json.loads((REPO / "docs" / "gpu-bench" / "bench-seed-workers.json").read_text())
    keys = ("batch_seconds", "data_wait_seconds", "first_batch_seconds", "worker_startup_seconds")
    measured = {
        Config.of(r): Result(Config.of(r), "ok", r["predicted_shm_bytes"], **{k: r[k] for k in keys})
        for r in doc["results"]
    }
    plan = Plan(list(measured), search=True)
    order = drive(plan, loop=measured.__getitem__)
    everything, searched = recommend(list(measured.values()), None), recommend(list(plan.results.values()), None)
    assert order == [3, 2, 3, 3, 3]
    assert searched is not None and everything is not None
    assert searched.choice.config == everything.choice.config == Config(3, 2, True, False)  # 0.2027 s
    assert [r.config for r in searched.alike] == [Config(3, 2, True, True)]  # 0.2034 s; unpinned: 0.244 s, not
