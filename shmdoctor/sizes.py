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
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(?:([kmgtp])(i?)(b?)|(b?))\s*$", re.IGNORECASE)


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
    if value <= 0 and isinstance(text, str) and text.strip("0. \t").rstrip("kmgtpibKMGTPIB "):  # 0.5: under a byte
        raise UsageError(f"{what}: {shown(text)} rounds down to zero bytes: give at least 1 (or 1k, 1m)")
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


# A Go float literal as strconv.ParseFloat reads one (decimal, or hexadecimal with its p exponent; an underscore
# only between two digits or after 0x): what go-units' parseSize hands it.
_GO_DIGITS, _GO_HEX = r"[0-9](?:_?[0-9])*", r"[0-9a-fA-F](?:_?[0-9a-fA-F])*"
_GO_FLOAT = re.compile(
    rf"[+-]?(?:(?:{_GO_DIGITS}(?:\.(?:{_GO_DIGITS})?)?|\.{_GO_DIGITS})(?:[eE][+-]?{_GO_DIGITS})?"
    rf"|0[xX]_?(?:{_GO_HEX}(?:\.(?:{_GO_HEX})?)?|\.{_GO_HEX})[pP][+-]?{_GO_DIGITS})"
)
_GO_INT64 = re.compile(r"[+-]?[0-9]+")


def ram_in_bytes(text: str) -> int:
    """docker/go-units' RAMInBytes as compose-go's go.mod pins it (v0.5.0, e682442797b3, size.go parseSize): the
    text up to its last digit, point or space is a Go float, the rest a suffix: b, or k/m/g/t/p with an optional b
    or ib, any case; one space may part them (or end a bare number), no other space anywhere; the bytes rounded
    toward zero. UsageError where it returns an error. Its own tests are tests/data/go-units/ram-in-bytes.json."""
    return int(_go_size(text))


def _go_size(text: str) -> float:
    """RAMInBytes' bytes before they are rounded toward zero."""
    sep = max(text.rfind(c) for c in "0123456789. ")
    if sep < 0:
        raise UsageError(f"invalid size: {shown(text)}")
    number, suffix = (text[:sep], text[sep + 1 :]) if text[sep] == " " else (text[: sep + 1], text[sep + 1 :])
    if not _GO_FLOAT.fullmatch(number):
        raise UsageError(f"invalid size: {shown(text)}")
    try:
        size = float.fromhex(number) if number.lstrip("+-")[:2].lower() == "0x" else float(number)
    except OverflowError:
        size = math.inf
    if not math.isfinite(size) or size < 0:  # Go: ErrRange past a float64; negative sizes refused
        raise UsageError(f"invalid size: {shown(text)}")
    if len(suffix.encode()) > 3:  # Go counts bytes, then lowers the suffix (its simple mapping: the Kelvin sign is k)
        raise UsageError(f"invalid suffix: {shown(suffix)}")
    unit = suffix.translate({0x212A: "k", 0x130: "i"}).lower()
    if unit in ("", "b"):
        return size
    if unit[:1] not in "kmgtp" or unit[1:] not in ("", "b", "ib"):
        raise UsageError(f"invalid suffix: {shown(suffix)}")
    return size * _UNITS[unit[:1]]


def compose_size(text: str | int, *, what: str = "size") -> int:
    """A compose size (shm_size, mem_limit, deploy's memory, a tmpfs volume's size) as compose-go reads one
    (compose-spec/compose-go e70e961c3a3a, types/bytes.go UnitBytes.parseString): a whole number (strconv.ParseInt),
    else ram_in_bytes(); then held to shmdoctor's bounds, as parse_size is."""
    return units_size(text, what=what, reader="compose's go-units")


def run_flag_size(text: str, *, what: str) -> int | None:
    """A run command's --shm-size or --memory (a script's, a Jenkins agent's, a Quadlet unit's ShmSize=) as the
    engine's CLI reads it: docker/cli's opts.MemBytes.Set is go-units' RAMInBytes, and so are Podman's and
    nerdctl's flags. None where it reads 0 (`0`, `0.`, `0.5`: rounded toward zero): the engine's default, or none."""
    try:
        if ram_in_bytes(text) == 0:
            return None
    except UsageError:
        pass  # said by units_size, with what was wrong
    return units_size(text, what=what, reader="the engine's go-units")


def units_size(text: str | int, *, what: str, reader: str) -> int:
    """A size as go-units reads it for `reader`, held to shmdoctor's bounds: compose-go's (compose_size), or a run
    command's flag (run_flag_size). A whole number is read exactly first: RAMInBytes' float64 reads it alike up to
    2^53, past the bound."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise UsageError(f"{what}: {shown(text)} is not a size (examples: 1048576, 512m, 2g, 1gb)")
    if isinstance(text, int) or _GO_INT64.fullmatch(text) and len(text.lstrip("+-")) <= MAX_DIGITS:
        exact: float = int(text)
    else:
        try:
            exact = _go_size(text)
        except UsageError as e:
            said = f"{what}: cannot read {shown(text)} as a size ({reader}: {e}; examples: 512m, 2g, 1.5gb)"
            raise UsageError(said) from None
    if 0 < exact < 1:
        raise UsageError(f"{what}: {shown(text)} rounds down to zero bytes: give at least 1 (or 1k, 1m)")
    if exact <= 0:
        raise UsageError(f"{what}: must be greater than zero, got {shown(text)}")
    if exact > MAX_BYTES:
        _at_most(MAX_BYTES + 1, text, what)
    return int(exact)


# apimachinery's grammar (resource.ParseQuantity): a sign, ASCII digits with an optional point (".5", "1.", even
# "."), then a binary suffix, a decimal one, or an exponent; no space anywhere. "E" alone is exa, "E6" an exponent.
_QUANTITY = r"([+-]?)([0-9]*)(?:(\.)([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)"
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(text: str | int, *, what: str = "") -> int:
    """A Kubernetes memory quantity -> bytes, exactly as apimachinery reads it ('2Gi', '512M', '4e9', '.5Gi',
    '+1Gi', '1.G'), its value rounded up to a whole byte as Quantity.Value() does; at most MAX_BYTES. Not a bool,
    not NaN or infinity (JSON), not negative, not full-width digits."""
    problem = f"{shown(text)} is not a Kubernetes quantity (examples: 2Gi, 512Mi, 1G)"
    if isinstance(text, bool) or not isinstance(text, (int, float, str)):
        raise UsageError(problem)
    if isinstance(text, float):
        if not math.isfinite(text) or text != int(text):
            raise UsageError(problem)
        text = int(text)
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"a quantity of memory cannot be negative, got {text!r}")
        return _at_most(text, text, what)
    m = re.fullmatch(_QUANTITY, text)
    if not m or not (m.group(2) or m.group(3)):
        raise UsageError(f"cannot read {shown(text)} as a Kubernetes quantity (examples: 2Gi, 512Mi, 1G)")
    sign, whole, _, fraction, suffix = m.groups()
    fraction = fraction or ""
    digits = int((whole + fraction) or "0")
    if digits and sign == "-":
        raise UsageError(f"a quantity of memory cannot be negative, got {shown(text)}")
    if not digits:  # 0, -0, ".", 0e999999: nothing, whatever its scale
        return 0
    if len(whole.lstrip("0")) > MAX_DIGITS:
        _at_most(MAX_BYTES + 1, text, what)
    if suffix in _BINARY:
        numerator, denominator = digits * 1024 ** _BINARY[suffix], 10 ** len(fraction)
    else:
        exponent = int(suffix[1:]) if suffix[:1] in ("e", "E") and len(suffix) > 1 else _SI[suffix]
        exponent -= len(fraction)
        if exponent > MAX_DIGITS:  # 1e999999: past any machine, said before 10**999999 is made
            _at_most(MAX_BYTES + 1, text, what)
        if exponent < -60:  # a positive amount smaller than any byte (and 10**-999999 is never made)
            return 1
        numerator, denominator = digits * 10 ** max(exponent, 0), 10 ** max(-exponent, 0)
    return _at_most(-(-numerator // denominator), text, what)


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


_TMPFS_SIZE = re.compile(r"^([0-9]{1,20})([kmgKMG]?)$")


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
