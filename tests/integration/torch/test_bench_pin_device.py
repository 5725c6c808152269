"""pin_memory_device on this machine's CPU-only torch, for real: what torch says at iter() and what bench makes of
it. Since torch 2.9 (pytorch#158323) a DataLoader with pin_memory=True warns at iterator creation that it ignores
pin_memory_device; no CUDA is faked here, so pin_memory itself pins nothing (torch warns that too)."""

import tempfile
import warnings

import pytest

from shmdoctor.bench.child import _iterate
from shmdoctor.bench.model import Config
from shmdoctor.bench.parent import run_one
from shmdoctor.bench.workload import BenchWorkload
from shmdoctor.bench.zygote import Zygote
from shmdoctor.exits import ExitCode
from tests.helpers import assert_one_line_error, run_cli

pytestmark = pytest.mark.usefixtures("torch_module")


def ignores(torch_module) -> bool:
    """The torch here deprecates pin_memory_device (2.9 on) and ignores it."""
    major, minor = (int(n) for n in torch_module.__version__.split(".")[:2])
    return (major, minor) >= (2, 9)


def test_the_iterator_says_whether_torch_ignored_pin_memory_device_and_lets_other_warnings_through(torch_module):
    from torch.utils.data import DataLoader  # here, not at the top: the fast lane collects this file without torch

    loader = DataLoader(list(range(8)), batch_size=4, pin_memory=True, pin_memory_device="cuda")
    bare = DataLoader(list(range(8)), batch_size=4, pin_memory=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        it, ignored = _iterate(loader, "cuda")
        assert _iterate(bare, None)[1] is None  # not passed: nothing to ignore
    assert [b.tolist() for b in it] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert ignored is ignores(torch_module)
    said = [str(w.message) for w in seen]
    assert not any("pin_memory_device is deprecated" in m for m in said)  # taken, and told in the result
    if not torch_module.accelerator.is_available():  # this machine: pin_memory pins nothing, and torch says so
        assert any("no accelerator is found" in m for m in said), said


def test_a_config_passing_pin_memory_device_runs_and_its_result_says_what_torch_did(torch_module):
    work = BenchWorkload(batch_size=4, batch_bytes=16384, sample_bytes=4096, batches=3, budget=20)
    with tempfile.TemporaryDirectory() as tmp, Zygote(tmp) as zygote:
        given = run_one(work, Config(1, 2, True, False, pin_memory_device="cuda"), zygote, memory_limited=False)
        bare = run_one(work, Config(1, 2, True, False), zygote, memory_limited=False)
    assert given.status == "ok" and given.batches == 3, given.message
    assert given.pin_memory_device_ignored is ignores(torch_module)
    assert bare.status == "ok" and bare.pin_memory_device_ignored is None
    assert given.to_dict(4)["pin_memory_device"] == "cuda"


def test_pin_memory_device_on_the_cpu_is_a_usage_error():
    args = ("--sample-bytes", "4k", "--batch-size", "4", "--device", "cpu", "--pin-memory-device", "cuda")
    proc = run_cli("bench", *args)
    assert_one_line_error(proc, ExitCode.USAGE, "--pin-memory-device: nothing is pinned on cpu")
