"""A reading of this machine through /proc (no engine): the host's /dev/shm first, as statvfs tells it; --max-targets
bounds the series and says how many were left out; a loader given is every target's need, or --workload's."""

from __future__ import annotations

import os

from shmdoctor.exporter.collect import Collector
from shmdoctor.exporter.inventory import ProcInventory
from shmdoctor.loader import LoaderSpec
from shmdoctor.sizes import MiB
from shmdoctor.workload import Workload

NO_LOADER = LoaderSpec()


def _reading(max_targets: int, loader: LoaderSpec = NO_LOADER, names: tuple[str, ...] = ()):
    inventory = ProcInventory(refresh=3600)
    inventory.start()
    try:
        collector = Collector(
            inventory,
            workload=Workload(loader),
            fail_on="error",
            timeout=30,
            max_targets=max_targets,
            engine=False,
            names=names,
        )
        return collector.scrape(), len(inventory.entries(30)[0])  # the scan it read (no other before an hour)
    finally:
        inventory.stop()


def test_the_host_comes_first_as_statvfs_tells_it():
    scrape, _ = _reading(1000)
    host = scrape.targets[0]
    assert host.labels.container == "" and host.labels.source == "system" and host.labels.ipc_mode == "host"
    st = os.statvfs("/dev/shm")
    assert host.report.facts.shm.size_bytes == st.f_blocks * st.f_frsize
    assert scrape.engine_up is None and scrape.errors == () and scrape.errors_total == 0


def test_max_targets_bounds_the_series_and_counts_the_rest():
    scrape, found = _reading(1)
    assert len(scrape.targets) == 1 and scrape.targets[0].labels.container == ""
    assert scrape.skipped == found - 1


def test_the_command_lines_loader_is_every_targets_need():
    scrape, _ = _reading(1000, LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB))
    assert {t.report.requirement.bytes for t in scrape.targets} == {900 * MiB}  # (2·4 + 1) × 100 MiB


def test_workload_names_the_targets_the_loader_is_for():
    """The same selection as lint's and audit's: a --workload no target has leaves each without the loader."""
    scrape, _ = _reading(1000, LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB), names=("no-such",))
    assert all(t.report.requirement is None for t in scrape.targets)
    assert "loader options not applied: not named by --workload" in scrape.targets[0].report.notes
