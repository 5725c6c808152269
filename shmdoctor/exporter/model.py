"""What one scrape found: a judged Report per target with its labels, and the scrape's own health."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..limits import clip
from ..model import Report

LABEL_MAX = 128  # characters of a label value: names and images are the user's, their length is not
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0, DEL, C1: ESC would reach a terminal showing the page


def bounded(value: str | None) -> str:
    """A label value: control characters written out (ESC as the four characters \\x1b), never longer than
    LABEL_MAX, never None."""
    return clip(CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value or ""), LABEL_MAX)


@dataclass(frozen=True)
class Labels:
    """The labels of a target's series. Each comes from inspect or /proc: a name, an ID, an image, a mode; never an
    environment value or a command line."""

    container: str  # the container's name ('' for the host itself; pod_<uid> for a pod found in /proc)
    container_id: str
    image: str
    ipc_mode: str
    source: str  # where /dev/shm comes from: docker-shm, tmpfs, host-ipc, ... (the JSON report's shm.source)

    def values(self) -> list[str]:
        return [bounded(v) for v in (self.container, self.container_id, self.image, self.ipc_mode, self.source)]


LABEL_NAMES = ("container", "container_id", "image", "ipc_mode", "source")


@dataclass(frozen=True)
class Target:
    report: Report
    labels: Labels
    leaked_bytes: int | None = None  # what `shmdoctor clean` would free in its /dev/shm; None: not read


@dataclass(frozen=True)
class Scrape:
    targets: tuple[Target, ...]
    duration_s: float
    errors: tuple[str, ...]  # what this scrape could not read, in words (the engine away, too slow)
    errors_total: int  # scrapes with an error since the exporter started
    engine_up: bool | None  # None: no engine (--source proc)
    skipped: int  # targets past --max-targets, not exported
