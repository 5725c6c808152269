"""The documents of many targets, each judged: audit's (the containers of one engine) and lint's (the services and
workloads of some files). Apart from model.py's one target and its Report: check never builds these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from .exits import ExitCode
from .model import Report, Verdict, worst_verdict


@dataclass(frozen=True)
class Reports:
    """Several targets, each judged: the verdict is the worst of theirs, and so is the exit code."""

    reports: tuple[Report, ...]

    @property
    def verdict(self) -> Verdict:
        return worst_verdict([r.verdict for r in self.reports])

    @property
    def exit_code(self) -> ExitCode:
        return max((r.exit_code for r in self.reports), default=ExitCode.OK)


@dataclass(frozen=True)
class Audit(Reports):
    """audit's document: the containers of one engine."""

    kind: ClassVar[str] = "audit"
    engine: str = ""  # where they were read: DOCKER_HOST, or the default socket
    exec: bool = False  # /dev/shm use read inside each running container (--exec)
    include_exited: bool = False


@dataclass(frozen=True)
class Lint(Reports):
    """lint's document: the services and workloads of some files."""

    kind: ClassVar[str] = "lint"
    sources: tuple[str, ...] = ()  # the files read, in order; "-" for stdin
    passed_over: tuple[str, ...] = ()  # <source>:<object> without a pod template
    files_passed_over: tuple[str, ...] = ()  # files of a directory that define nothing, each with why
    errors: tuple[str, ...] = ()  # files of a directory (or of several inputs) that could not be judged, each with why
    # each file's text as judged (documents.digest): lint --fix writes only the file it judged
    digests: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def exit_code(self) -> ExitCode:
        """2 when a file could not be judged (its error is in the document), else the reports' worst."""
        return ExitCode.USAGE if self.errors else super().exit_code
