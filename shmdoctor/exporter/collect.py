"""One reading: the inventory's targets, their /dev/shm use read now through /proc, judged by the rules.

Nothing here waits on the engine longer than the scrape's timeout (the inventory is kept by its own thread) and
nothing is run inside a container: a container's /dev/shm is statvfs'ed as `/proc/<pid>/root/dev/shm`.
Judgements are kept while a target's facts do not change. Leaked segments (what `shmdoctor clean` would free) are
looked for at most every LEAKS_EVERY seconds per /dev/shm: a leak is a slow thing, and finding one scans /proc.
"""

from __future__ import annotations

import time

from ..errors import ProbeError
from ..fleet import ignoring, judge_labelled
from ..model import SHM, Report, Severity
from ..probe import docker, procfs
from ..shm.removal import creators_visible, unheld
from ..suppress import Selection, mark
from ..workload import Workload, selection
from .inventory import Entry, Inventory, host_entry
from .model import Scrape, Target

LEAKS_EVERY = 60.0  # seconds between two looks for leaked segments in one /dev/shm


class Collector:
    def __init__(
        self,
        inventory: Inventory,
        *,
        workload: Workload,
        fail_on: Severity,
        timeout: float,
        max_targets: int,
        engine: bool,
        proc: str = "/proc",
        names: tuple[str, ...] = (),
        rules: Selection | None = None,
    ) -> None:
        self.rules = rules or Selection()  # --ignore, --select
        self.inventory, self.workload, self.fail_on, self.names = inventory, workload, fail_on, names
        self.timeout, self.max_targets, self.engine, self.proc = timeout, max_targets, engine, proc
        # With an engine, the host's own /dev/shm is a target beside the containers (/proc scans include it).
        self.host = host_entry(proc) if engine else None
        self.errors_total = 0
        self._judged: dict[tuple, Report] = {}
        self._leaks: dict[tuple[int, int | None], tuple[float, int | None]] = {}  # (pid, device) -> (when, bytes)
        self._creators_visible = creators_visible()

    def scrape(self) -> Scrape:
        start = time.perf_counter()
        entries, error = self.inventory.entries(self.timeout)
        if self.host is not None:
            entries = [self.host, *entries]
        kept = entries[: self.max_targets]
        judged: dict[tuple, Report] = {}
        skipped = selection([e.probed.facts for e in kept], self.names) if self.workload.given else [""] * len(kept)
        targets = tuple(self._target(e, judged, skip) for e, skip in zip(kept, skipped))
        self._judged = judged  # only what this scrape saw: bounded by the targets
        seen = {(e.probed.pid, e.device) for e in kept}
        self._leaks = {k: v for k, v in self._leaks.items() if k in seen}
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

    def _target(self, entry: Entry, judged: dict[tuple, Report], skipped: str) -> Target:
        probed = self._read(entry)
        facts, ignore = ignoring(probed)  # its shmdoctor.ignore label
        key = (facts, probed.loader_label, probed.notes, skipped, ignore)
        report = self._judged.get(key) or judge_labelled(
            facts, self.workload, probed.loader_label, self.fail_on, probed.notes, skipped=skipped
        )
        judged[key] = report = mark(report, ignore, self.rules)
        return Target(report, entry.labels, self._leaked(entry))

    def _leaked(self, entry: Entry) -> int | None:
        """Bytes of the known segments no live process holds in the target's /dev/shm (None: not readable)."""
        pid = entry.probed.pid
        if pid is None or not entry.probed.facts.shm.present:
            return None
        key, now = (pid, entry.device), time.monotonic()
        when, leaked = self._leaks.get(key, (-LEAKS_EVERY, None))
        if now - when >= LEAKS_EVERY:
            try:
                plan, _ = unheld(f"{self.proc}/{pid}/root{SHM}", creators_visible_here=self._creators_visible)
                leaked = plan.leaked_bytes
            except (OSError, ProbeError):  # gone since the inventory: said by its use reading already
                leaked = None
            self._leaks[key] = (now, leaked)
        return leaked

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
