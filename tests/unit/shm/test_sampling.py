"""The sampler behind watch: the tally of samples and scans, and which samples are news."""

from __future__ import annotations

from datetime import datetime, timezone

from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.render import render
from shmdoctor.shm.sampling import HEARTBEAT_S, Sampler, Tally


def test_the_tally_adds_up_peak_and_biggest_holds():
    w = Tally()
    for t, used in ((0.0, 10), (0.5, 30), (1.0, 20)):
        w.sample(t, 100, used)
    assert (w.start_used, w.peak, w.peak_t, w.samples) == (10, 30, 0.5, 3)
    seg = lambda inode, n: Segment(inode, f"torch_{inode}", n, True)  # noqa: E731
    w.scanned(Holders((Holder(7, "a", (seg(1, 4096),)),), unreadable=("pid 1 (init): permission denied",)), {})
    w.scanned(Holders((Holder(7, "a", (seg(1, 4096), seg(2, 8192))), Holder(9, "b", (seg(3, 4096),)))), {})
    w.scanned(Holders(()), {})
    assert [(h.pid, h.bytes) for h in w.biggest()] == [(7, 12288), (9, 4096)]
    assert w.scans == 3 and w.unreadable == {"pid 1 (init): permission denied"}


def test_a_sample_is_news_when_usage_or_holders_change_and_at_each_heartbeat(tmp_path):
    sampler, now = Sampler(str(tmp_path), holders_every=2.0), datetime.now(timezone.utc)
    held = Holders((Holder(7, "python train.py", (Segment(1, "torch_1", 4096, True),)),))
    samples = [
        sampler.record(t, 100, used, fresh, now)
        for t, used, fresh in (
            (0.0, 10, None),
            (0.5, 10, None),
            (1.0, 20, None),
            (1.5, 20, held),
            (2.0, 20, held),
            (1.5 + HEARTBEAT_S, 20, None),
        )
    ]
    assert [s.news for s in samples] == [True, False, True, True, False, True]
    assert [s.holders_changed for s in samples] == [False, False, False, True, False, False]
    printed = [render(s, "text") for s in samples]  # text prints the news, and the holders under their sample
    assert [bool(p) for p in printed] == [True, False, True, True, False, True]
    assert printed[3].splitlines()[1].split()[:2] == ["pid", "7"] and "\n" not in printed[5]
    summary = sampler.summary(2.0 + HEARTBEAT_S)
    assert (summary.samples, summary.holder_scans, summary.peak_bytes, summary.start_used_bytes) == (6, 2, 20, 10)
    assert summary.exit_code == 0 and summary.over_budget is None


def test_the_peak_is_judged_against_the_budget_with_a_few_pages_of_slack(tmp_path):
    mib = 2**20
    for peak, over in ((100 * mib, False), (102 * mib, False), (103 * mib, True)):
        sampler = Sampler(str(tmp_path), budget=100 * mib)
        sampler.record(0.0, 1000 * mib, peak, None)
        assert sampler.summary(1.0).over_budget is over, peak


def test_a_hold_that_shrinks_is_remembered_at_its_biggest(tmp_path):
    # pid 7 holds 3 pages, then 1 (a worker freed two batches), then 2; pid 9 1 page then 4: what each held at most
    # is 3 and 4 pages, whatever came last; each scan's biggest is another process's
    page, sampler = 4096, Sampler(str(tmp_path), holders_every=1.0)
    seg = lambda inode, n: Segment(inode, f"torch_{inode}", n * page, True)  # noqa: E731
    scans = [
        (Holder(7, "train", (seg(1, 1), seg(2, 2))), Holder(9, "worker", (seg(3, 1),))),
        (Holder(9, "worker", (seg(3, 1), seg(4, 3))), Holder(7, "train", (seg(1, 1),))),
        (Holder(7, "train", (seg(1, 1), seg(5, 1))), Holder(9, "worker", (seg(3, 1),))),
    ]
    for t, held in enumerate(scans):
        sampler.record(float(t), 100 * page, sum(h.bytes for h in held), Holders(held))
    summary = sampler.summary(3.0)
    assert [(h.pid, h.bytes) for h in summary.holders] == [(9, 4 * page), (7, 3 * page)]
    assert [s.inode for s in summary.holders[1].segments] == [1, 2]  # the hold that was biggest, not the last one


def test_a_consumers_use_that_shrinks_is_remembered_at_its_biggest(tmp_path):
    # the DataLoader's segments take 8 pages then 2, NCCL's 1 then 5: at most 8 and 5 pages, biggest first; the last
    # scan's order is the other way round
    page, sampler = 4096, Sampler(str(tmp_path), holders_every=1.0)
    seg = lambda inode, name, n: Segment(inode, name, n * page, True)  # noqa: E731
    scans = [
        Holder(7, "train", (seg(1, "torch_7_1_1", 8), seg(2, "nccl-Ab12Cd", 1))),
        Holder(7, "train", (seg(3, "torch_7_1_2", 2), seg(4, "nccl-Xy34Zw", 5))),
    ]
    for t, held in enumerate(scans):
        sampler.record(float(t), 100 * page, held.bytes, Holders((held,)))
    assert list(sampler.summary(2.0).consumers.items()) == [("dataloader", 8 * page), ("nccl", 5 * page)]


def test_holds_of_the_same_size_are_listed_by_pid():
    w, seg = Tally(), Segment(1, "torch_1", 4096, True)
    w.scanned(Holders((Holder(12, "b", (seg,)), Holder(3, "a", (seg,)))), {})
    assert [h.pid for h in w.biggest()] == [3, 12]
