"""Byte sizes: parse what Docker and Kubernetes accept, print IEC, and round up to what a person would type."""

from __future__ import annotations

import re

from .errors import UsageError

PAGE = 4096
KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4

_UNITS = {"": 1, "b": 1, "k": KiB, "m": MiB, "g": GiB, "t": TiB, "p": 1024**5}
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}
# Docker style (512m, 2g, 1.5GB: binary multiples, as docker's RAMInBytes) and IEC (1MiB, 2Gi). Kubernetes
# quantities, where "M" is decimal, have their own parser: parse_quantity.
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([kmgtp])(i?)(b?)|(b?))\s*$", re.IGNORECASE)


def parse_size(text: str | int, *, what: str = "size") -> int:
    """'512m', '2g', '1MiB', '2GiB', '1048576' -> bytes. Raises UsageError with a one-line message."""
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m:
            raise UsageError(f"{what}: cannot read {text!r} as a size (examples: 1048576, 512m, 2g, 1MiB, 2GiB)")
        number, unit = m.group(1), m.group(2) or ""
        value = int(float(number) * _UNITS[unit.lower()])
    if value <= 0:
        raise UsageError(f"{what}: must be greater than zero, got {text!r}")
    return value


_QUANTITY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P|m)?\s*$")


def parse_quantity(text: str | int) -> int:
    """A Kubernetes memory quantity ('2Gi', '512M', '1e9' not included) -> bytes."""
    if isinstance(text, (int, float)):
        return int(text)
    m = _QUANTITY.match(str(text))
    if not m:
        raise UsageError(f"cannot read {text!r} as a Kubernetes quantity (examples: 2Gi, 512Mi, 1G)")
    number, unit = float(m.group(1)), m.group(2) or ""
    if unit.endswith("i"):
        return int(number * _UNITS[unit[0].lower()])
    if unit == "m":  # milli-bytes: legal, absurd
        return int(number / 1000)
    return int(number * _DECIMAL.get(unit.lower(), 1))


def page_round(n: int) -> int:
    return -(-n // PAGE) * PAGE


def page_floor(n: int) -> int:
    return n // PAGE * PAGE


def parse_tmpfs_size(text: str) -> int | None:
    """A tmpfs `size=` value (mountinfo, --tmpfs, compose): bytes or a k/m/g suffix; None for '50%' or junk."""
    units = {"k": KiB, "m": MiB, "g": GiB}
    try:
        if text[-1:].lower() in units:
            return int(text[:-1]) * units[text[-1].lower()]
        return int(text)
    except ValueError:
        return None


def format_size(n: int | None) -> str:
    """Bytes -> '64 MiB', '1.5 GiB', '900 MiB'."""
    if n is None:
        return "unknown"
    for unit, size in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
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
