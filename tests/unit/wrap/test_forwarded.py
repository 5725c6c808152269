"""run's forwarded set, every signal of it: the set read from the manual (docs/commands/run.md names it, the
contract a scheduler's or a shell's signals rely on), each one run's to die of in turn, the others not; and one
signal other than SIGINT and SIGTERM delivered for real to run, which passes it on to a command that handles it.
(tests/integration/process/test_run_transparent.py sends each signal of the set, in the integration lane.)"""

from __future__ import annotations

import re
import select
import signal
import sys

import pytest

from shmdoctor.wrap.child import FORWARDED, Ended
from tests.helpers import REPO, WAIT, kill_started, start_cli


def documented() -> list[signal.Signals]:
    text = " ".join((REPO / "docs" / "commands" / "run.md").read_text().split())
    said = re.search(r"a signal of the forwarded set \(([A-Z0-9, ]+):", text)
    assert said, "docs/commands/run.md no longer names the forwarded set"
    return [signal.Signals[name.strip()] for name in said.group(1).split(",")]


def test_the_forwarded_set_is_the_one_the_manual_names():
    assert len(documented()) == 6  # SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
    assert sorted(FORWARDED) == sorted(documented())


@pytest.mark.parametrize("signum", documented(), ids=lambda s: s.name)
def test_a_death_by_a_forwarded_signal_is_runs_to_die_of(signum):
    assert Ended(128 + signum, 1.0, (signum,), 1, signum).ours == signum


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGALRM, signal.SIGSEGV, signal.SIGBUS, signal.SIGPIPE])
def test_a_death_by_another_signal_is_the_commands_alone(signum):
    assert Ended(128 + signum, 1.0, (), 1, signum).ours is None
    assert Ended(0, 1.0, ()).ours is None


# Handles SIGHUP (a daemon's reload, a scheduler's hang-up): says so and exits 7; run exits as it did.
HANDLES = """
import signal, sys
def hup(*_):
    print("got SIGHUP", flush=True)
    sys.exit(7)
signal.signal(signal.SIGHUP, hup)
print("ready", flush=True)
while True:
    signal.pause()
"""


def test_a_sighup_sent_to_run_reaches_the_command_which_handles_it():
    proc = start_cli("run", "--no-instrument", "--", sys.executable, "-c", HANDLES)
    try:
        assert select.select([proc.stdout], [], [], WAIT)[0], "the command never said it was ready"
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        kill_started()
    assert out == "got SIGHUP\n" and proc.returncode == 7, (proc.returncode, out, err)
