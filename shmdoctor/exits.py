"""Every exit code shmdoctor returns, in one place. cli.main maps errors to them; commands return them."""

from __future__ import annotations

import enum

# SIGINT and SIGTERM's numbers from _signal, in place when Python starts: `signal` builds three enums on import, a
# cost to check, which uses no signal (typeshed has no stub for _signal)
from _signal import SIGINT, SIGTERM  # type: ignore[import-not-found]


class ExitCode(enum.IntEnum):
    OK = 0  # ok or warn
    FINDING = 1  # a finding at the --fail-on severity; a leaked segment that could not be removed
    USAGE = 2  # bad input or usage: one line on stderr
    PROBE = 3  # a fact could not be read at all (engine unreachable, permission denied, no /dev/shm)
    INTERNAL = 70  # a fault of shmdoctor's own (a bug): one line; never 1, a finding to CI scripts (EX_SOFTWARE)
    COMMAND_NOT_EXECUTABLE = 126  # run: the command is there but cannot be executed, as a shell says
    COMMAND_NOT_FOUND = 127  # run: no such command, as a shell says
    INTERRUPTED = 128 + SIGINT  # 130: Ctrl-C, as a shell reports it
    TERMINATED = 128 + SIGTERM  # 143: SIGTERM (docker stop, timeout), as a shell reports it
