"""Byte sizes: parse what Docker and Kubernetes accept, print IEC, and round up to what a person would type."""

from __future__ import annotations

import math
import re

from .errors import UsageError
from .limits import MAX_BYTES, MAX_DIGITS, shown

PAGE = 4096
KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4

_UNITS = {"": 1, "b": 1, "k": KiB, "m": MiB, "g": GiB, "t": TiB, "p": 1024**5}
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}
# Docker style (512m, 2g, 1.5GB: binary multiples, as docker's RAMInBytes) and IEC (1MiB, 2Gi). Kubernetes
# quantities, where "M" is decimal, have their own parser: parse_quantity.
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([kmgtp])(i?)(b?)|(b?))\s*$", re.IGNORECASE)


def parse_size(text: str | int, *, what: str = "size") -> int:
    """'512m', '2g', '1MiB', '2GiB', '1048576' -> bytes, at most MAX_BYTES. Raises UsageError with a one-line message.
    A bool is not a size (YAML's `shm_size: true`), nor is anything past a PiB (400 digits)."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise UsageError(f"{what}: {shown(text)} is not a size (examples: 1048576, 512m, 2g, 1MiB, 2GiB)")
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE.match(text)
        if not m:
            raise UsageError(f"{what}: cannot read {shown(text)} as a size (examples: 1048576, 512m, 2g, 1MiB, 2GiB)")
        number, unit = m.group(1), m.group(2) or ""
        value = _exact(number, _UNITS[unit.lower()], text, what)
    if value <= 0:
        raise UsageError(f"{what}: must be greater than zero, got {shown(text)}")
    return _at_most(value, text, what)


def _exact(number: str, unit: int, text: object, what: str) -> int:
    """digits[.digits] x unit, exactly (no float: 400 digits are not infinity), bounded before it is multiplied."""
    if len(number.partition(".")[0].lstrip("0")) > MAX_DIGITS:
        _at_most(MAX_BYTES + 1, text, what)
    return _scaled(number, unit)


def _scaled(number: str, unit: int, divisor: int = 1) -> int:
    """digits[.digits] x unit / divisor, rounded down, in integers (exact, as a Fraction would be, without its
    import: `check` parses a size)."""
    whole, _, frac = number.partition(".")
    scale: int = 10 ** len(frac)
    return int(whole + frac) * unit // (scale * divisor)


def _at_most(value: int, text: object, what: str) -> int:
    if value > MAX_BYTES:
        at = f"{what}: " if what else ""
        raise UsageError(f"{at}{shown(text)} is more than {format_size(MAX_BYTES)}, more memory than any machine has")
    return value


_QUANTITY = r"^\s*(\d+(?:\.\d+)?)\s*(Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P|m)?\s*$"  # compiled (cached by re) at first use


def parse_quantity(text: str | int, *, what: str = "") -> int:
    """A Kubernetes memory quantity ('2Gi', '512M'; '1e9' not included) -> bytes, at most MAX_BYTES. Not a bool,
    not NaN or infinity (JSON), not negative."""
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise UsageError(f"{shown(text)} is not a Kubernetes quantity (examples: 2Gi, 512Mi, 1G)")
    if isinstance(text, float):
        if not math.isfinite(text) or text != int(text):
            raise UsageError(f"{shown(text)} is not a Kubernetes quantity (examples: 2Gi, 512Mi, 1G)")
        text = int(text)
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"a quantity of memory cannot be negative, got {text!r}")
        return _at_most(text, text, what)
    m = re.match(_QUANTITY, text)
    if not m:
        raise UsageError(f"cannot read {shown(text)} as a Kubernetes quantity (examples: 2Gi, 512Mi, 1G)")
    number, unit = m.group(1), m.group(2) or ""
    if unit.endswith("i"):
        return _at_most(_exact(number, _UNITS[unit[0].lower()], text, what), text, what)
    if unit == "m":  # milli-bytes: legal, absurd
        return _at_most(_scaled(number, 1, 1000), text, what)
    return _at_most(_exact(number, _DECIMAL.get(unit.lower(), 1), text, what), text, what)


def page_round(n: int) -> int:
    return -(-n // PAGE) * PAGE


def page_floor(n: int) -> int:
    return n // PAGE * PAGE


def parse_tmpfs_size(text: str) -> int | None:
    """A tmpfs `size=` value (mountinfo, --tmpfs, compose): bytes or a k/m/g suffix, at most MAX_BYTES; None for
    '50%' or junk."""
    m = _TMPFS_SIZE.match(text)
    if not m:
        return None
    value = int(m.group(1)) * {"": 1, "k": KiB, "m": MiB, "g": GiB}[m.group(2).lower()]
    return value if value <= MAX_BYTES else None


_TMPFS_SIZE = re.compile(r"^(\d{1,20})([kmgKMG]?)$")


def format_size(n: int | None) -> str:
    """Bytes -> '64 MiB', '1.5 GiB', '900 MiB'."""
    if n is None:
        return "unknown"
    for unit, size in (("PiB", 1024 * TiB), ("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(n) >= size:
            value = n / size
            # two decimals under 10 units (1.04 GiB is not 1 GiB), one under 100, none above
            digits = 2 if value < 10 else 1 if value < 100 else 0
            text = f"{value:.{digits}f}"
            return (text.rstrip("0").rstrip(".") if digits else text) + f" {unit}"
    return f"{n} B"


# Sizes people type for --shm-size: 64m, 96m, 128m, 192m, 256m, ... each step 1.5x or 1.33x of the last.
_NICE_MIB = [m * 2**e for e in range(6, 24) for m in (1, 1.5)]


def nice_size(n: int) -> int:
    """The smallest size of the 1-1.5-2-3-4-6-8 series (in MiB, from 64 MiB) that is at least n bytes;
    whole GiB beyond the series."""
    return next((int(m * MiB) for m in _NICE_MIB if m * MiB >= n), -(-n // GiB) * GiB)


def docker_size(n: int) -> str:
    """Bytes -> the shortest exact Docker spelling: '2g', '1536m', '65536k'."""
    for suffix, size in (("g", GiB), ("m", MiB), ("k", KiB)):
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def k8s_quantity(n: int) -> str:
    """Bytes -> the shortest exact Kubernetes spelling: '2Gi', '1536Mi'."""
    for suffix, size in (("Gi", GiB), ("Mi", MiB), ("Ki", KiB)):
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)
