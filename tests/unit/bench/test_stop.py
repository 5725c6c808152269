import os
import signal

import pytest

from shmdoctor.bench.stop import SIGNALS, Stopped, deferred, stop_on_signals


@pytest.fixture(autouse=True)
def handlers_back():
    """After a stop the command ignores more signals till it exits; this process goes on, and its children would
    inherit SIG_IGN."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    yield
    for s, h in before.items():
        signal.signal(s, h)


def test_a_signal_inside_deferred_is_raised_when_the_block_ends():
    # `import torch` runs C++ that calls back into Python: a Stopped raised there aborts the process or becomes an
    # ImportError (CI saw both), so the block runs to its end and the stop comes after it.
    reached = []
    with pytest.raises(Stopped) as stop, stop_on_signals(), deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        reached.append("after the signal")
    assert reached == ["after the signal"] and stop.value.exit_code == 143


def test_a_signal_outside_deferred_is_raised_where_it_lands():
    reached = []
    with pytest.raises(Stopped) as stop, stop_on_signals():
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("after the signal")
    assert reached == [] and stop.value.exit_code == 130
