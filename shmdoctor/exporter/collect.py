"""One scrape: the inventory's targets, their /dev/shm use read now through /proc, judged by the rules.

Nothing here waits on the engine longer than the scrape's timeout (the inventory is kept by its own thread) and
nothing is run inside a container: a container's /dev/shm is statvfs'ed as `/proc/<pid>/root/dev/shm`.
Judgements are kept while a target's facts do not change, so a scrape of many idle containers costs little more
than a scrape of one.
"""

from __future__ import annotations

import time

from ..fleet import judge_labelled
from ..loader import LoaderSpec
from ..model import SHM, Report, Severity
from ..probe import docker, procfs
from .inventory import Entry, Inventory, host_entry
from .model import Scrape, Target


class Collector:
    def __init__(
        self,
        inventory: Inventory,
        *,
        loader: LoaderSpec,
        fail_on: Severity,
        timeout: float,
        max_targets: int,
        engine: bool,
        proc: str = "/proc",
    ) -> None:
        self.inventory, self.loader, self.fail_on = inventory, loader, fail_on
        self.timeout, self.max_targets, self.engine, self.proc = timeout, max_targets, engine, proc
        # With an engine, the host's own /dev/shm is a target beside the containers (/proc scans include it).
        self.host = host_entry(proc) if engine else None
        self.errors_total = 0
        self._judged: dict[tuple, Report] = {}

    def scrape(self) -> Scrape:
        start = time.perf_counter()
        entries, error = self.inventory.entries(self.timeout)
        if self.host is not None:
            entries = [self.host, *entries]
        kept = entries[: self.max_targets]
        judged: dict[tuple, Report] = {}
        targets = tuple(self._target(e, judged) for e in kept)
        self._judged = judged  # only what this scrape saw: bounded by the targets
        if error:
            self.errors_total += 1
        return Scrape(
            targets=targets,
            duration_s=time.perf_counter() - start,
            errors=(error,) if error else (),
            errors_total=self.errors_total,
            engine_up=(error is None) if self.engine else None,
            skipped=len(entries) - len(kept),
        )

    def _target(self, entry: Entry, judged: dict[tuple, Report]) -> Target:
        probed = self._read(entry)
        key = (probed.facts, probed.loader_label, probed.notes)
        report = self._judged.get(key) or judge_labelled(
            probed.facts, self.loader, probed.loader_label, self.fail_on, probed.notes
        )
        judged[key] = report
        return Target(report, entry.labels)

    def _read(self, entry: Entry) -> docker.Probed:
        """The entry with its /dev/shm use read now, through the process it was found with."""
        probed = entry.probed
        if probed.pid is None or not probed.facts.shm.present:
            return probed
        path = f"{self.proc}/{probed.pid}/root{SHM}"
        try:
            device, size, used, free = procfs.usage(path)
        except OSError as e:  # it stopped since the inventory: the next event or scan drops it
            return docker.with_usage(probed, f"statvfs {path}: {e.strerror}")
        if device != entry.device:  # the pid now belongs to another process: not this target's /dev/shm
            return probed
        return docker.with_usage(probed, (size, used, free), f"from the host through {path}")
