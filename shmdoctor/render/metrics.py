"""A scrape as Prometheus metrics (the text exposition format, through prometheus_client).

Pure: a Scrape in, metric families or text out. Every target series carries the same five labels; a finding adds
its `id` and `severity` (from the rule catalogue: a fixed set). A fact that was not read is no sample, never a 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest, write_to_textfile

from ..exporter.model import LABEL_NAMES, Scrape, Target

PREFIX = "shmdoctor_"


def _gauge(name: str, doc: str, labels: tuple[str, ...] = LABEL_NAMES) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, labels=list(labels))


def families(scrape: Scrape) -> Iterator[Metric]:
    size = _gauge("shm_size_bytes", "Size of the target's /dev/shm (statvfs, or the container's definition).")
    used = _gauge("shm_used_bytes", "Bytes in use in the target's /dev/shm (statvfs: unlinked segments included).")
    limit = _gauge("memory_limit_bytes", "The target's memory limit, which /dev/shm pages are charged to.")
    need = _gauge(
        "need_bytes", "Peak /dev/shm the target's loader needs (its shmdoctor.loader label, else --batch-size...)."
    )
    finding = _gauge("finding", "1 per finding of shmdoctor's rules on the target.", LABEL_NAMES + ("id", "severity"))
    leaked = _gauge("leaked_bytes", "Bytes of segments no live process holds: what `shmdoctor clean` would free.")
    oom = _gauge("oom_killed", "1 when the kernel OOM-killed a process of the target (the engine said so), else 0.")
    for target in scrape.targets:
        _samples(target, size, used, limit, need, finding, leaked, oom)
    yield from (size, used, limit, need, finding, leaked, oom)

    yield GaugeMetricFamily(
        PREFIX + "scrape_duration_seconds",
        "Time the latest reading of every target took (read, judged; every --interval seconds).",
        scrape.duration_s,
    )
    yield CounterMetricFamily(
        PREFIX + "scrape_errors",
        "Readings that could not read everything (the engine away, too slow).",
        scrape.errors_total,
    )
    yield GaugeMetricFamily(PREFIX + "targets", "Targets in the latest reading.", len(scrape.targets))
    yield GaugeMetricFamily(
        PREFIX + "targets_skipped", "Targets past --max-targets, left out of the latest reading.", scrape.skipped
    )
    if scrape.engine_up is not None:
        yield GaugeMetricFamily(
            PREFIX + "engine_up",
            "1 when the container engine answered and its containers are known.",
            int(scrape.engine_up),
        )


def _samples(target: Target, size, used, limit, need, finding, leaked, oom) -> None:
    labels = target.labels.values()
    report = target.report
    facts = report.facts
    shm = facts.shm
    if shm.size_bytes is not None:
        size.add_metric(labels, shm.size_bytes)
    if shm.used_bytes is not None:
        used.add_metric(labels, shm.used_bytes)
    if facts.memory.limit_bytes is not None:
        limit.add_metric(labels, facts.memory.limit_bytes)
    if report.requirement is not None:
        need.add_metric(labels, report.requirement.bytes)
    for f in report.active:
        finding.add_metric([*labels, f.id, f.severity], 1)
    if target.leaked_bytes is not None:
        leaked.add_metric(labels, target.leaked_bytes)
    if facts.target.kind == "container":
        oom.add_metric(labels, int("oom-killed" in facts.flags))


class _Families:
    """What prometheus_client's writers walk: anything with collect()."""

    def __init__(self, scrape: Scrape) -> None:
        self.scrape = scrape

    def collect(self) -> Iterator[Metric]:
        return families(self.scrape)


def render(scrape: Scrape) -> bytes:
    """The text exposition format (version 0.0.4), as Prometheus and node_exporter's textfile collector read it."""
    return generate_latest(_Families(scrape))


def write_textfile(path: str, scrape: Scrape) -> None:
    """Written beside `path`, then renamed over it: node_exporter never reads half a file (and skips the temporary,
    whose name does not end in .prom)."""
    write_to_textfile(path, _Families(scrape))
