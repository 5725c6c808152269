"""bench's options as the command parses them into the session's Request (the sweep itself: tests/integration/torch)."""

from __future__ import annotations

import pytest

from shmdoctor.bench import session
from shmdoctor.cli import main
from shmdoctor.commands.bench import pin_device_list
from shmdoctor.errors import UsageError


class Asked(BaseException):
    """Raised by the stand-in session with the Request the command built: nothing runs. (A BaseException: main
    turns any Exception into an internal error's one line.)"""


@pytest.fixture
def asked(monkeypatch):
    def bench(request, progress):
        raise Asked(request)

    monkeypatch.setattr(session, "bench", bench)

    def run(*args: str) -> session.Request:
        with pytest.raises(Asked) as e:
            main(["bench", "--sample-bytes", "1m", "--batch-size", "8", *args])
        return e.value.args[0]

    return run


def test_pin_memory_device_is_not_swept_by_default(asked):
    assert asked().pin_memory_device == (None,)


@pytest.mark.parametrize(
    "text, devices",
    [
        ("cuda", ("cuda",)),
        ("none,cuda:1", (None, "cuda:1")),
        (" NONE , CUDA:0 ,cuda:0", (None, "cuda:0")),
        (",cuda", (None, "cuda")),  # empty: not passed
    ],
)
def test_pin_memory_device_lists(asked, text, devices):
    assert pin_device_list(text) == devices
    assert asked("--pin-memory-device", text).pin_memory_device == devices


@pytest.mark.parametrize("text", ["cpu", "cuda:", "cuda:x", "mps", "cuda:-1"])
def test_pin_memory_device_takes_only_cuda_devices(text):
    with pytest.raises(UsageError, match="--pin-memory-device: expected a comma list of none, cuda or cuda:N"):
        pin_device_list(text)


@pytest.mark.parametrize(
    "text, workers, search",
    [
        ("0..8", tuple(range(9)), True),
        (" 2 : 4 ", (2, 3, 4), True),
        ("0,2,4,2", (0, 2, 4), False),
        ("6", (6,), False),
    ],
)
def test_num_workers_is_a_list_walked_or_a_range_searched(asked, text, workers, search):
    request = asked("--num-workers", text)
    assert (request.workers, request.search) == (workers, search)


@pytest.mark.parametrize("text", ["8..0", "2..2", "-1..3", "a..b", "0..100000", "0:32:0", "0..", "0.." + "1" * 5000])
def test_a_range_that_is_not_two_counts_lower_first_is_a_usage_error_quoting_it_as_typed(asked, capsys, text):
    assert main(["bench", "--sample-bytes", "1m", "--batch-size", "8", "--num-workers", text]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shmdoctor: error: --num-workers: a range is two counts from 0 to 1024, the lower first")
    assert repr(text)[:40] in err
