"""Errors that end a command, each with the exit code it maps to (cli.main is the one place that maps them)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .exits import ExitCode

if TYPE_CHECKING:
    from .model import Report


def internal(e: BaseException) -> str:
    """A fault of ours (a bug) as one line: what raised, where, and what to do; never a traceback."""
    import traceback  # here: only a bug pays for it

    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    return f"internal error ({type(e).__name__}{where}): {e}; a bug in shmdoctor: please report it"


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

        fix = next((x for f in report.active if f.severity == "error" for x in f.fixes if x.sets), None)
        hint = f"; fix: {forms.line(fix, report.facts)}" if fix else ""
        super().__init__(report.headline() + hint)
