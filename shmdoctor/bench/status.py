"""What a config's end means: ok, shm-exhausted, out-of-memory or error, told from the real texts PyTorch prints
(FACTS.md).

Pure: the error text the child caught, its log and its exit status in; (status, one telling line) out.
"""

from __future__ import annotations

import re
import signal

from .model import Status

# Each pattern, matched in the caught error and the child's log, means the loader ran out of shared memory.
SHM_SIGNS = (
    # PyTorch >= 2.10 (posix_fallocate); some releases misreport ENOSPC as errno 11 (torch #176069, the seed's text):
    # "unable to allocate shared memory(shm) for file </torch_...>: Resource temporarily unavailable (11)".
    re.compile(r"unable to allocate shared memory.*", re.IGNORECASE),
    # Older PyTorch (ftruncate only): the worker dies of SIGBUS.
    re.compile(r"^.*bus error.*$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"^.*insufficient shared memory.*$", re.IGNORECASE | re.MULTILINE),
)
# A worker killed by the OOM killer: /dev/shm's fault where its pages are charged to a memory limit (shm_charged).
WORKER_KILLED = re.compile(r"DataLoader worker \(pid[^)]*\) is killed by signal: Killed\.?")
ENOSPC = re.compile(r"^.*No space left on device.*$", re.MULTILINE)
SHM_CONTEXT = re.compile(r"torch_|/dev/shm|shared memory|DataLoader worker", re.IGNORECASE)
NOT_FOUND = re.compile(r"^.*FileNotFoundError.*$", re.MULTILINE)
OOM_KILLED = "killed by SIGKILL (the OOM killer, most likely: /dev/shm pages count toward the memory limit)"
OOM_COUNTED = "the memory cgroup's OOM killer ended a process of the run (/dev/shm pages count toward the memory limit)"
OOM_MEMORY = (
    "killed by SIGKILL (the OOM killer, most likely): memory ran out, not /dev/shm (no memory limit counts this "
    "run's /dev/shm pages, or no worker put any there)"
)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def classify_end(
    error: str,
    log: str,
    returncode: int | None,
    *,
    shm_present: bool = True,
    timed_out: bool = False,
    oom_killed: bool = False,
    shm_charged: bool = True,
) -> tuple[Status, str]:
    """The status of one finished config and the line that says why.

    error: the exception the child caught (its text, with the worker's traceback); "" when it caught none.
    log: the child's stdout and stderr (where a dying worker prints its bus error); returncode: the child's exit
    status (negative: killed by that signal). oom_killed: the memory cgroup counted an OOM kill meanwhile (a worker
    killed that way only "exited unexpectedly" in the main process's words). shm_charged: the run's /dev/shm pages
    count toward a memory limit (a limit, and workers); when they do not, a kill for memory is "out-of-memory".
    """
    text = f"{error}\n{log}"
    if oom_killed:  # whatever PyTorch made of it ("exited unexpectedly", "killed by signal: Killed"), it was this
        said = f": {_last_line(error)}" if error else ""
        return ("shm-exhausted", OOM_COUNTED + said) if shm_charged else ("out-of-memory", OOM_MEMORY + said)
    for source in (error, log):  # the main process's words first; a dying worker's own in the log
        for sign in SHM_SIGNS:
            m = sign.search(source)
            if m:
                said = m.group(0).strip()
                return "shm-exhausted", said if source is error or not error else f"{said} ({_last_line(error)})"
    m = ENOSPC.search(text)
    if m and SHM_CONTEXT.search(text):
        return "shm-exhausted", m.group(0).strip()
    m = NOT_FOUND.search(text)
    if m and not shm_present:
        return "shm-exhausted", f"there is no /dev/shm: {m.group(0).strip()}"
    m = WORKER_KILLED.search(error)
    if m or returncode == -signal.SIGKILL and not timed_out:
        said = m.group(0).strip() if m else OOM_KILLED
        return ("shm-exhausted", said) if shm_charged else ("out-of-memory", OOM_MEMORY + (f": {said}" if m else ""))
    if timed_out:
        return "error", "timed out: the config did not finish in its time limit"
    if returncode == -signal.SIGBUS:
        return "shm-exhausted", "killed by SIGBUS (a bus error: /dev/shm ran out under a mapped segment)"
    if error:
        return "error", _last_line(error)
    if returncode:
        why = f"killed by signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"
        return "error", f"{why}: {_last_line(log) or 'no message'}"
    return "ok", ""
