"""Numbers on the command line are ASCII (issue 38): Click reads them with int() and float(), which took '１２'
(full-width), '١٢' (Arabic-Indic), '1_2' and ' 12' as 12. Every numeric option of every command, found by walking
them, takes the shared ASCII types of shmdoctor/numbers.py and refuses those with one line, exit 2; bench's comma
lists too."""

from __future__ import annotations

import importlib
import itertools

import click
import pytest

from shmdoctor.cli import COMMANDS
from shmdoctor.commands.bench import Seconds
from shmdoctor.numbers import Float, FloatRange, Int, IntRange
from tests.helpers import assert_one_line_error, forked_cli

UNTYPED = ("１２", "١٢", "1_2", " 12", "12 ", "٣")  # each an int() and a float() of Python's took


def numeric_options() -> list[tuple[str, str, click.ParamType]]:
    found = []
    for name in COMMANDS:
        command = importlib.import_module(f"shmdoctor.commands.{name}").command
        for param in command.params:
            if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType, Seconds)):
                found.append((name, max(param.opts, key=len), param.type))
    return found


def test_every_numeric_option_takes_a_shared_ascii_type():
    found = numeric_options()
    assert len(found) >= 20  # the loader's, the consumers', timeouts, intervals, bench's
    assert [(c, o) for c, o, t in found if not isinstance(t, (Int, Float, IntRange, FloatRange, Seconds))] == []


@pytest.mark.parametrize(
    "command, option, value",
    [(c, o, v) for (c, o, _), v in zip(numeric_options(), itertools.cycle(UNTYPED))],
    ids=lambda x: str(x),
)
def test_a_number_not_in_ascii_digits_is_one_line_exit_2(command, option, value):
    proc = forked_cli(command, option, value)
    assert_one_line_error(proc, 2, "in ASCII digits")


@pytest.mark.parametrize("value", ["12", "1e3", "+5", ".5", "1.", "-0", "inf", "NaN"])
def test_what_ascii_spells_reads_as_before(value):
    got = Float().convert(value, None, None)
    assert got == float(value) or got != got  # NaN: the options' own bounds refuse it, as they did
    if value.lstrip("+-").isdigit():
        assert Int().convert(value, None, None) == int(value)


@pytest.mark.parametrize(
    "args, said",
    [
        (["--num-workers", "0,１"], "--num-workers: expected a comma list of integers"),
        (["--num-workers", "0..１٢"], "--num-workers: a range is two counts"),
        (["--prefetch-factor", "٢"], "--prefetch-factor: expected a comma list of integers"),
        (["--pin-memory-device", "cuda:１"], "--pin-memory-device: expected a comma list"),
    ],
)
def test_bench_lists_read_ascii_counts(args, said):
    proc = forked_cli("bench", "--batch-size", "2", "--sample-bytes", "1k", *args)
    assert_one_line_error(proc, 2, said)
