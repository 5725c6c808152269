"""The adaptive sweep's choices, on results shaped like the seed's (5 ms a sample, batch 100, a 0.2 s step)."""

from __future__ import annotations

from shmdoctor.bench.model import Config, Result
from shmdoctor.bench.plan import Plan
from shmdoctor.sizes import MiB

B = 100 * MiB
# seconds a batch and waiting a batch by workers, as the seed's experiment measures them (H200, docs/gpu-bench.md)
SEED = {0: (0.739, 0.539), 1: (0.584, 0.383), 2: (0.291, 0.090), 3: (0.203, 0.0), 4: (0.208, 0.0)}
SEED.update(dict.fromkeys(range(5, 33), (0.205, 0.0)))


def config(w: int) -> Config:
    return Config(w, 2 if w else None, False, False)


def need(c: Config) -> int:
    return (2 * c.num_workers + 1) * B if c.num_workers else 0


def drive(plan: Plan, fail_over: int | None = None) -> list[int]:
    """Runs the plan against SEED; configs needing more than fail_over run out of /dev/shm. The order run."""
    order = []
    while (c := plan.next()) is not None:
        order.append(c.num_workers)
        if fail_over is not None and need(c) > fail_over:
            plan.record(Result(c, "shm-exhausted", need(c)))
        else:
            t, wait = SEED[c.num_workers]
            plan.record(Result(c, "ok", need(c), batch_seconds=t, data_wait_seconds=wait))
    return order


def test_a_list_is_walked_until_the_loop_stops_waiting_and_more_workers_stop_paying():
    plan = Plan([config(w) for w in (0, 1, 2, 3, 4, 6, 8)])
    assert drive(plan) == [0, 1, 2, 3, 4]  # 3 no longer waits but paid; 4 neither waits nor pays: stop
    skipped = plan.skipped(need)
    assert [r.config.num_workers for r in skipped] == [6, 8] and {r.status for r in skipped} == {"skipped"}
    assert "no longer waited for data at num_workers=4, which was no faster than num_workers=3" in skipped[0].message


def test_a_range_is_searched_by_bisection_around_the_knee():
    plan = Plan([config(w) for w in range(33)], search=True)
    order = drive(plan)
    assert order[0] == 32 and 3 in order and len(order) <= 7, order  # log2(33) + 1 runs, not 33
    assert 2 in order  # the knee is bracketed: 2 waits, 3 does not
    skipped = plan.skipped(need)
    assert len(skipped) == 33 - len(order)
    assert all(r.message.startswith("searched: num_workers=3 is the fewest at the knee") for r in skipped)


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
