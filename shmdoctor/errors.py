"""Errors that end a command, each with the exit code it maps to (cli.main is the one place that maps them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exits import ExitCode

if TYPE_CHECKING:
    from .model import Report


class ShmDoctorError(Exception):
    exit_code = ExitCode.FINDING


class UsageError(ShmDoctorError):
    """Bad input: a flag, a size, a dataset spec, a file. Exit 2."""

    exit_code = ExitCode.USAGE


class ProbeError(ShmDoctorError):
    """A fact could not be read at all (engine unreachable, permission denied). Exit 3."""

    exit_code = ExitCode.PROBE


class InsufficientSharedMemoryError(ShmDoctorError):
    """Raised by preflight() when the loader will not fit in this container's shared memory."""

    exit_code = ExitCode.FINDING

    def __init__(self, report: Report):
        self.report = report
        from .render import forms

        fix = next((x for f in report.findings if f.severity == "error" for x in f.fixes if x.sets), None)
        hint = f"; fix: {forms.line(fix, report.facts)}" if fix else ""
        super().__init__(report.headline() + hint)
