"""Numbers on the command line, read in ASCII as they are typed: Click reads them with Python's int() and float(),
which take '１２' (full-width), '١٢' (Arabic-Indic), '1_000' and ' 12 ' as 12 and 1000. Every numeric option of
every command takes one of these types (tests/unit/test_numbers.py walks them all), and bench's comma lists read
their counts with integer(): anything else is one line, exit 2."""

from __future__ import annotations

import re
from typing import Any

import click

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)")


def integer(text: str) -> int:
    """An integer in ASCII digits; ValueError for anything else."""
    if not _INT.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _typed(value: Any, kind: type, param: Any, ctx: Any) -> None:
    """BadParameter for what Python reads as a number and ASCII does not spell; junk is left to Click to say."""
    if isinstance(value, str) and not (_INT if kind is int else _FLOAT).fullmatch(value.lower()):
        try:
            kind(value)
        except ValueError:
            return
        what = "an integer" if kind is int else "a number"
        raise click.BadParameter(f"{value!r} is not {what} in ASCII digits", ctx, param)


class _Ascii:
    """Click's own number type, given only what ASCII spells."""

    kind: type = int

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        _typed(value, self.kind, param, ctx)
        return super().convert(value, param, ctx)  # type: ignore[misc]


class Int(_Ascii, click.types.IntParamType):
    kind = int


class Float(_Ascii, click.types.FloatParamType):
    kind = float


class IntRange(_Ascii, click.IntRange):
    kind = int


class FloatRange(_Ascii, click.FloatRange):
    kind = float


INT, FLOAT = Int(), Float()


def ascii_float(value: Any, param: Any, ctx: Any) -> None:
    """For a type of its own that reads a float (bench's Seconds): BadParameter unless ASCII spells it."""
    _typed(value, float, param, ctx)
