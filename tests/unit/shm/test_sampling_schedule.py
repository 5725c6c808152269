"""When the sampler reads and scans, and when watch() samples and stops, without waiting: a clock of the test's
(watch's sleep advances it), the tmpfs's use as the test says it (statvfs stood in for), the holders' scans
counted. What is asserted is the schedule the docstrings give: a sample every interval from 0, the last at the
duration; a scan when the use changed and the last scan is holders_every old; news at a change and every
HEARTBEAT_S; a summary that says what stopped it, with the shell's exit code (128 + the signal)."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

import pytest

from shmdoctor.errors import ProbeError, UsageError
from shmdoctor.probe.holders import Holders
from shmdoctor.shm import sampling
from shmdoctor.shm.sampling import HEARTBEAT_S, Sampler, Summary, Tally, within_budget

MiB = 2**20


class Clock:
    """monotonic() and sleep(); `waiting` runs at each sleep, before the time passes (a signal that comes then)."""

    def __init__(self, now: float = 1000.0, per_sample: float = 0.0) -> None:
        self.now, self.per_sample, self.waiting, self.sleeps = now, per_sample, lambda: None, 0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps += 1
        assert self.sleeps < 1000, "a schedule that never ends"
        self.waiting()
        self.now += seconds


class Sampled:
    """A sampler for watch(): each sample takes the clock's per_sample seconds."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.ts = clock, []

    def sample(self, t: float):
        self.ts.append(round(t, 6))
        self.clock.now += self.clock.per_sample
        return round(t, 6)

    def summary(self, elapsed: float, stopped_by: int | None = None):
        return round(elapsed, 6), stopped_by


def watched(monkeypatch, clock: Clock, sampler: Sampled, interval: float, duration: float | None):
    monkeypatch.setattr(sampling, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    emitted: list = []
    summary = sampling.watch(sampler, interval=interval, duration=duration, emit=emitted.append)  # type: ignore[arg-type]
    assert emitted == sampler.ts  # each sample emitted as it comes
    return summary


def test_a_sample_every_interval_from_0_and_the_last_at_the_duration(monkeypatch):
    clock = Clock()
    sampler = Sampled(clock)
    assert watched(monkeypatch, clock, sampler, 0.5, 2.0) == (2.0, None)
    assert sampler.ts == [0.0, 0.5, 1.0, 1.5, 2.0]


def test_a_slow_sample_is_not_waited_after_and_the_duration_is_not_passed(monkeypatch):
    clock = Clock(per_sample=0.7)  # longer than the interval: the next one at once
    sampler = Sampled(clock)
    assert watched(monkeypatch, clock, sampler, 0.5, 2.0) == (2.8, None)
    assert sampler.ts == [0.0, 0.7, 1.4, 2.1]
    clock = Clock(per_sample=0.1)
    sampler = Sampled(clock)
    watched(monkeypatch, clock, sampler, 0.75, 2.0)
    assert sampler.ts == [0.0, 0.75, 1.5, 2.0]  # the last one at the duration, not at 2.25


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_it_with_its_summary_and_puts_the_handlers_back(monkeypatch, signum, code):
    before = signal.getsignal(signum)
    clock = Clock()
    sampler = Sampled(clock)
    clock.waiting = lambda: len(sampler.ts) == 3 and os.kill(os.getpid(), signum)  # while waiting for the 4th
    elapsed, stopped = watched(monkeypatch, clock, sampler, 1.0, None)  # no duration: until a signal
    assert (sampler.ts, elapsed, stopped) == ([0.0, 1.0, 2.0], 2.0, signum)
    assert signal.getsignal(signum) is before
    summary = Summary("/dev/shm", 2.0, 3, 0, 0, None, 0, 0.0, None, None, (), (), stopped_by=int(signum))
    assert summary.interrupted and summary.exit_code == code  # 128 + the signal, as a shell reports it
    done = Summary("/dev/shm", 2.0, 3, 0, 0, None, 0, 0.0, None, None, (), ())
    assert not done.interrupted and done.exit_code == 0


def reading(monkeypatch, tmp_path, holders_every: float, uses: list[tuple[float, int]]) -> list[bool]:
    """Which of the readings (t, use) scanned the holders."""
    scans: list[float] = []
    now = {"used": 0}
    monkeypatch.setattr(sampling.local, "shm_usage", lambda d: (64 * MiB, now["used"], 0))
    monkeypatch.setattr(sampling.holders_probe, "scan", lambda d: scans.append(now["t"]) or Holders(()))
    monkeypatch.setattr(sampling, "list_files", lambda d: [])
    sampler = Sampler(str(tmp_path), holders_every=holders_every)
    for t, used in uses:
        now.update(t=t, used=int(str(used)))  # made at run time, as statvfs's are: one object a reading
        sampler.sample(t)
    return [t in scans for t, _ in uses]


def test_holders_are_scanned_when_the_use_changed_and_the_last_scan_is_old_enough(monkeypatch, tmp_path):
    uses = [(0.0, 0), (1.0, 0), (1.5, 5 * MiB), (2.0, 6 * MiB), (2.5, 6 * MiB), (3.0, 7 * MiB), (3.9, 8 * MiB),
            (4.0, 9 * MiB), (6.0, 3 * MiB), (8.0, 3 * MiB)]  # fmt: skip
    # at once (even of nothing used); the same use: no; changed 1.5 s after: no; 2 s after: yes; the same: no;
    # changed within 2 s of that: no, then 2 s after: yes; fallen 2 s after: yes; the same 2 s after: no
    expected = [True, False, False, True, False, False, False, True, True, False]
    assert reading(monkeypatch, tmp_path, 2.0, uses) == expected
    assert reading(monkeypatch, tmp_path, 2.0, [(0.0, 1)]) == [True]  # one byte used at the first: scanned too
    assert reading(monkeypatch, tmp_path, 0.0, uses) == [False] * len(uses)  # never asked to


def test_news_is_a_change_or_a_heartbeat(tmp_path):
    sampler = Sampler(str(tmp_path))
    used = int("7340032")  # an int made at run time, as statvfs's are: not one object with the next one
    ts = [3.0, 3.5, 3.0 + HEARTBEAT_S - 0.1, 3.0 + HEARTBEAT_S]
    news = [sampler.record(t, 64 * MiB, int(str(used)), None).news for t in ts]
    assert news == [True, False, False, True]


def test_the_first_sample_is_the_peak_whatever_it_uses_and_a_later_equal_one_is_not():
    w = Tally()
    w.sample(0.5, 100, 0)
    assert (w.peak, w.peak_t) == (0, 0.5)
    w.sample(1.0, 100, 0)
    assert w.peak_t == 0.5  # the first to reach it


def test_consumers_are_listed_biggest_first_whatever_their_names():
    w = Tally()
    w.scanned(Holders(()), {"dataloader": 5 * MiB, "nccl": 8 * MiB, "vllm": 0})
    assert list(w.biggest_consumers()) == ["nccl", "dataloader", "vllm"]


def test_the_budgets_slack_is_1_mib_and_1_percent_to_the_byte():
    budget = 3 * MiB  # 3,145,728 B: its 1 % is 31,457 B
    assert within_budget(budget + MiB + 31_457, budget) and not within_budget(budget + MiB + 31_458, budget)


def test_a_missing_dev_shm_is_a_probe_error_and_another_missing_path_a_usage_error(monkeypatch):
    monkeypatch.setattr(sampling.os.path, "isdir", lambda p: False)
    with pytest.raises(ProbeError, match="there is no /dev/shm here"):
        Sampler("/dev/shm")
    for path in ("/dev/shm/x", "/dev/sh", "/tmp/shm", "/dev/shm/"):
        with pytest.raises(UsageError, match="is not a directory"):
            Sampler(path)
