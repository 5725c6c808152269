"""What a config takes in memory, and when a sweep is refused before anything runs (issue 11: --batch-size
1099511627776 --sample-bytes 1g took 23 GB and set off the host's OOM killer)."""

from __future__ import annotations

from shmdoctor.bench.model import Config
from shmdoctor.bench.workload import BenchWorkload, memory_need, refusal
from shmdoctor.sizes import GiB, MiB

B = 100 * MiB


def workload(batch_bytes=B, sample=MiB, cuda=False):
    return BenchWorkload(
        batch_size=batch_bytes // sample,
        batch_bytes=batch_bytes,
        sample_bytes=sample,
        device="cuda:0" if cuda else "cpu",
    )


def test_a_config_takes_its_shm_batches_its_own_batch_and_each_process_sample():
    assert memory_need(workload(), Config(0, None, False, False)) == B + MiB  # built in the process
    assert memory_need(workload(), Config(4, 2, False, False)) == 9 * B + 5 * MiB  # (2·4+1) in /dev/shm
    assert memory_need(workload(cuda=True), Config(4, 2, True, True)) == 8 * B + B + 5 * MiB  # + the pinned copy


def test_a_batch_over_the_memory_here_is_refused_whatever_the_limit():
    work = workload(batch_bytes=30 * GiB, sample=GiB)
    assert "one batch is 30 GiB (30 × 1 GiB" in refusal(work, [Config(0, None, False, False)], 20 * GiB, None)
    small = workload(batch_bytes=2 * GiB, sample=GiB)  # fits the machine, not the memory limit's room
    assert "more than the 1 GiB of memory available" in refusal(small, [Config(0, None, False, False)], 20 * GiB, GiB)


def test_a_config_over_the_machines_memory_is_refused_and_under_a_limit_it_runs():
    configs = [Config(0, None, False, False), Config(4, 2, False, False)]
    said = refusal(workload(), configs, 500 * MiB, None)
    assert said.startswith("num_workers=4, prefetch_factor=2 needs at least 905 MiB of memory")
    assert refusal(workload(), configs, 2 * GiB, None) is None
    # under a 600 MiB limit the kill stays in the limit: it runs, and its end measures what the limit cannot hold
    assert refusal(workload(), configs, 2 * GiB, 600 * MiB) is None
