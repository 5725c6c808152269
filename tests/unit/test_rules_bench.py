"""bench's rules, in the catalogue beside the facts' rules: each with catching and non-catching sweeps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shmdoctor.bench.model import Config, Result
from shmdoctor.bench.workload import BenchWorkload
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.rules import catalogue
from shmdoctor.rules_bench import judge_bench
from shmdoctor.sizes import GiB, MiB

WORK = BenchWorkload(batch_size=100, batch_bytes=100 * MiB, sample_bytes=MiB)
FACTS = Facts(
    target=Target("local", "this machine"),
    shm=Shm(present=True, size_bytes=64 * MiB, used_bytes=0, free_bytes=64 * MiB, source="docker-shm"),
    ipc=Ipc(mode="private"),
    memory=Memory(limit_bytes=None, used_bytes=None),
    runtime="docker",
)
ZERO, TWO = Config(0, None, False, False), Config(2, 2, False, False)


def result(config, status, message=""):
    need = 5 * 100 * MiB if config.num_workers else 0
    return Result(config, status, need, message=message, batch_seconds=0.2 if status == "ok" else None)


CASES = {
    "bench-shm-exhausted": [
        ([result(ZERO, "ok"), result(TWO, "shm-exhausted", "No space left on device (28)")], True),
        ([result(ZERO, "ok"), result(TWO, "ok")], False),
    ],
    "bench-out-of-memory": [
        ([result(ZERO, "out-of-memory", "killed by SIGKILL")], True),
        ([result(ZERO, "ok")], False),
    ],
    "bench-error": [
        ([result(TWO, "error", "ValueError: bad sample")], True),
        ([result(TWO, "skipped", "searched")], False),
    ],
}


@pytest.mark.parametrize("rule_id, results, fires", [(k, *c) for k, cases in CASES.items() for c in cases])
def test_bench_rule_cases(rule_id, results, fires):
    assert (rule_id in [f.id for f in judge_bench(WORK, results, FACTS)]) == fires


def test_every_bench_rule_has_cases_both_ways_and_is_in_the_catalogue():
    bench = {r.id for r in catalogue() if r.on == "bench"}
    assert bench == set(CASES)
    for cases in CASES.values():
        assert {fires for _, fires in cases} == {True, False}


def test_shm_exhausted_grows_dev_shm_never_shrinks_it():
    (found,) = judge_bench(WORK, [result(TWO, "shm-exhausted", "No space left on device (28)")], FACTS)
    sizes = [fx.shm_bytes for fx in found.fixes if fx.shm_bytes]
    assert sizes and all(size > 64 * MiB for size in sizes)
    roomy = replace(FACTS, shm=Shm(True, 64 * GiB, 0, 64 * GiB, "docker-shm"))  # 500 MiB fits 64 GiB many times
    (doubt,) = judge_bench(WORK, [result(TWO, "shm-exhausted", "bus error")], roomy)
    assert doubt.fixes == () and "look beyond /dev/shm" in doubt.message


def test_out_of_memory_offers_nothing_about_dev_shm():
    (found,) = judge_bench(WORK, [result(ZERO, "out-of-memory", "killed by SIGKILL")], FACTS)
    assert all(not fx.sets for fx in found.fixes) and "not for /dev/shm" in found.message


def test_the_fix_covers_the_configs_skipped_for_not_fitting_too():
    four = Config(4, 2, False, False)
    skipped = Result(four, "skipped", 9 * 100 * MiB, message="predicted to need 900 MiB of /dev/shm")
    (found,) = judge_bench(WORK, [result(TWO, "shm-exhausted", "No space left on device (28)"), skipped], FACTS)
    assert "1 more predicted not to fit were not run" in found.message and "needs 900 MiB" in found.message
