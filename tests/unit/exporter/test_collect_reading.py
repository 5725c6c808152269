"""One reading of the exporter without an engine or the machine's /proc: an inventory that answers what the test
gives it (the captured container of tests/data/inspect), a /proc of directories in a temporary folder whose
`<pid>/root/dev/shm` is a real directory with real files. Each target's use is read through its pid only while the
pid's /dev/shm is the one inventoried (its st_dev); leaked segments are looked for once a minute
(docs/commands/exporter.md), per /dev/shm; the scrape's own health says the inventory's errors."""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

from shmdoctor.exporter import collect
from shmdoctor.exporter.collect import Collector
from shmdoctor.exporter.inventory import Entry
from shmdoctor.exporter.model import Labels
from shmdoctor.loader import LoaderSpec
from shmdoctor.probe import docker
from shmdoctor.suppress import Selection
from shmdoctor.workload import Workload
from tests.helpers import DATA, REPO

PID = 4242


class Inventory:
    def __init__(self, entries: list[Entry], error: str | None = None) -> None:
        self.answer = (entries, error)

    def entries(self, wait: float):
        return self.answer


def entry(proc, *, pid: int | None = PID, device: int | None = None, name: str = "default") -> Entry:
    probed = docker.facts_from_inspect(json.loads((DATA / "inspect" / f"{name}.json").read_text()))
    probed = docker.Probed(probed.facts, pid=pid, image=probed.image)
    shm = proc / str(pid) / "root" / "dev" / "shm"
    shm.mkdir(parents=True, exist_ok=True)
    facts = probed.facts
    labels = Labels(facts.target.name, facts.target.id or "", probed.image or "", facts.ipc.mode, facts.shm.source)
    return Entry(probed, labels, os.stat(shm).st_dev if device is None else device)


def collector(inventory, proc, *, engine: bool = True, max_targets: int = 1000, rules=None) -> Collector:
    (proc / "1" / "root" / "dev" / "shm").mkdir(parents=True, exist_ok=True)  # the host's, read with an engine
    c = Collector(
        inventory,
        workload=Workload(LoaderSpec()),
        fail_on="error",
        timeout=1,
        max_targets=max_targets,
        engine=engine,
        proc=str(proc),
        rules=rules,
    )
    c.host = None  # the machine's own /dev/shm left out: only the targets given
    return c


def test_the_engines_health_and_the_errors_so_far_are_the_inventorys(tmp_path):
    inventory = Inventory([])
    c = collector(inventory, tmp_path)
    assert (c.scrape().engine_up, c.scrape().errors_total) == (True, 0)
    inventory.answer = ([], "the Docker engine at unix:///x went away: ConnectionResetError")
    first, second = c.scrape(), c.scrape()
    assert (first.engine_up, first.errors_total, second.errors_total) == (False, 1, 2)
    assert second.errors == ("the Docker engine at unix:///x went away: ConnectionResetError",)
    assert collector(inventory, tmp_path, engine=False).scrape().engine_up is None  # --source proc: no engine


def test_a_reading_says_how_long_it_took_and_how_many_targets_it_left_out(tmp_path):
    entries = [entry(tmp_path / "proc", pid=PID + i) for i in range(10)]
    c = collector(Inventory(entries), tmp_path / "proc", max_targets=3)
    before = time.perf_counter()
    scrape = c.scrape()
    took = time.perf_counter() - before
    assert (len(scrape.targets), scrape.skipped) == (3, 7)
    assert 0 <= scrape.duration_s <= took


def test_a_pids_dev_shm_is_read_only_while_it_is_the_one_inventoried(tmp_path):
    proc = tmp_path / "proc"
    here = entry(proc)
    st = os.statvfs(proc / str(PID) / "root" / "dev" / "shm")
    [target] = collector(Inventory([here]), proc).scrape().targets
    assert target.report.facts.shm.size_bytes == st.f_blocks * st.f_frsize  # read now, through the pid
    for other in (here.device + 1, here.device - 1):  # the pid reused by a process of another /dev/shm
        moved = Entry(here.probed, here.labels, other)
        [target] = collector(Inventory([moved]), proc).scrape().targets
        assert target.report.facts.shm.size_bytes == 64 * 2**20  # the inspect's, not the other one's
        assert target.report.facts.shm.used_bytes is None


def test_a_pid_gone_since_the_inventory_is_said_and_not_a_target_of_no_pid(tmp_path):
    proc = tmp_path / "proc"
    gone = entry(proc, pid=PID)
    (proc / str(PID) / "root" / "dev" / "shm").rmdir()
    [target] = collector(Inventory([gone]), proc).scrape().targets
    assert any(f"statvfs {proc}/{PID}/root/dev/shm" in u for u in target.report.facts.unreadable)
    assert target.leaked_bytes is None
    remote = entry(proc, pid=None)
    [target] = collector(Inventory([remote]), proc).scrape().targets
    assert target.leaked_bytes is None and target.report.facts.shm.used_bytes is None
    none = entry(proc, name="ipcnone")  # --ipc=none: no /dev/shm to read or to look in
    [target] = collector(Inventory([none]), proc).scrape().targets
    assert target.leaked_bytes is None and not target.report.facts.shm.present


def test_leaked_segments_are_looked_for_once_a_minute_per_dev_shm(tmp_path, monkeypatch):
    manual = (REPO / "docs" / "commands" / "exporter.md").read_text()
    assert "(looked for once a minute)" in manual
    now = [10.0]  # a machine up for 10 s: CLOCK_MONOTONIC counts from boot
    monkeypatch.setattr(collect, "time", SimpleNamespace(monotonic=lambda: now[0], perf_counter=time.perf_counter))
    proc = tmp_path / "proc"
    target = entry(proc)
    shm = proc / str(PID) / "root" / "dev" / "shm"
    (shm / "sem.mp-abcd1234").write_bytes(b"s" * 8192)  # a semaphore nobody maps any more: leaked
    c = collector(Inventory([target]), proc)
    first = 8192 if (shm / "sem.mp-abcd1234").stat().st_blocks * 512 == 8192 else None
    assert first and c.scrape().targets[0].leaked_bytes == first  # looked for at once
    (shm / "sem.mp-efgh5678").write_bytes(b"s" * 8192)
    for at, seen in ((69.9, first), (70.0, 2 * first)):  # not before a minute passed, and then at once
        now[0] = at
        assert c.scrape().targets[0].leaked_bytes == seen, at


def test_a_dev_shm_that_cannot_be_looked_in_has_no_leaked_bytes(tmp_path, monkeypatch):
    proc = tmp_path / "proc"
    target = entry(proc)
    for error in (PermissionError(13, "Permission denied"), collect.ProbeError("cannot scan /proc")):

        def unheld(path, creators_visible_here, error=error):
            raise error

        monkeypatch.setattr(collect, "unheld", unheld)
        assert collector(Inventory([target]), proc).scrape().targets[0].leaked_bytes is None


def test_the_commands_ignore_leaves_its_rule_out(tmp_path):
    proc = tmp_path / "proc"
    target = entry(proc, pid=None)  # 64 MiB, no use read: a loader of 900 MiB does not fit
    c = collector(Inventory([target]), proc, rules=Selection(ignore=frozenset({"shm-too-small"})))
    c.workload = Workload(LoaderSpec(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    [found] = [f for f in c.scrape().targets[0].report.findings if f.id == "shm-too-small"]
    assert found.suppressed is not None
