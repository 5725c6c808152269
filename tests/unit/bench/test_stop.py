import os
import signal

import pytest

from shmdoctor.bench.stop import SIGNALS, Stopped, stop_on_signals


@pytest.fixture(autouse=True)
def handlers_back():
    """After a stop the command ignores more signals till it exits; this process goes on, and its children would
    inherit SIG_IGN."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    yield
    for s, h in before.items():
        signal.signal(s, h)


def test_a_signal_is_raised_where_it_lands():
    reached = []
    with pytest.raises(Stopped) as stop, stop_on_signals():
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("after the signal")
    assert reached == [] and stop.value.exit_code == 130
