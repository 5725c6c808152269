import re

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.sizes import (
    GiB,
    KiB,
    MiB,
    docker_size,
    format_size,
    k8s_quantity,
    nice_size,
    parse_quantity,
    parse_size,
    parse_tmpfs_size,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1048576", MiB),
        ("512m", 512 * MiB),
        ("2g", 2 * GiB),
        ("2G", 2 * GiB),
        ("1MiB", MiB),
        ("2GiB", 2 * GiB),
        ("64k", 64 * KiB),
        ("1.5g", int(1.5 * GiB)),
        ("100MB", 100 * MiB),
        ("1Mi", MiB),
        (" 8m ", 8 * MiB),
        (4096, 4096),
    ],
)
def test_parse_size_accepts_docker_and_iec(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "-1m", "0", "0m", "1x", "m", "1..2g", "2 gigs"])
def test_parse_size_rejects_with_one_line(text):
    with pytest.raises(UsageError) as e:
        parse_size(text, what="--sample-bytes")
    assert "\n" not in str(e.value) and "--sample-bytes" in str(e.value)


@pytest.mark.parametrize(
    "value, fragment",
    [
        (True, "True is not a size"),  # YAML's `shm_size: true`, once printed as "True B"
        (False, "False is not a size"),
        (0.5, "0.5 is not a size"),
        (None, "None is not a size"),
        ("1" + "0" * 400, "(401 characters) is more than 1 PiB"),  # once a float overflow and a traceback
        ("9" * 400 + "g", "is more than 1 PiB"),
        (2**50 + 1, "is more than 1 PiB"),
        ("1025t", "is more than 1 PiB"),
    ],
)
def test_parse_size_refuses_what_is_not_a_size_or_more_than_any_machine(value, fragment):
    with pytest.raises(UsageError, match=re.escape(fragment)):
        parse_size(value, what="shm_size")


def test_parse_size_is_exact_at_the_bound():
    assert parse_size("1024t") == parse_size(2**50) == 2**50
    assert parse_size("0.5k") == 512


@pytest.mark.parametrize(
    "value, fragment",
    [
        (float("nan"), "nan is not a Kubernetes quantity"),  # JSON's NaN
        (float("inf"), "inf is not a Kubernetes quantity"),  # JSON's Infinity, or 1e400
        (-1, "cannot be negative"),  # sizeLimit: -1
        (True, "True is not a Kubernetes quantity"),
        (0.5, "0.5 is not a Kubernetes quantity"),
        ("9" * 400 + "Gi", "is more than 1 PiB"),
        (10**400, "is more than 1 PiB"),
    ],
)
def test_parse_quantity_refuses_what_is_not_a_quantity(value, fragment):
    with pytest.raises(UsageError, match=re.escape(fragment)):
        parse_quantity(value)


@pytest.mark.parametrize(
    "text, expected", [("2Gi", 2 * GiB), ("512Mi", 512 * MiB), ("1G", 10**9), ("500M", 5 * 10**8), (1024, 1024)]
)
def test_parse_quantity(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "need, size, docker, k8s",
    [
        (900 * MiB, 1024 * MiB, "1g", "1Gi"),
        (int(1125 * MiB), 1536 * MiB, "1536m", "1536Mi"),
        (1, 64 * MiB, "64m", "64Mi"),
        (2 * GiB, 2 * GiB, "2g", "2Gi"),
        (2 * GiB + 1, 3 * GiB, "3g", "3Gi"),
    ],
)
def test_nice_sizes_are_what_people_type(need, size, docker, k8s):
    assert nice_size(need) == size
    assert docker_size(size) == docker and k8s_quantity(size) == k8s


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (4096, "4 KiB"),
        (64 * MiB, "64 MiB"),
        (int(1.5 * GiB), "1.5 GiB"),
        (900 * MiB, "900 MiB"),
        (None, "unknown"),
        (2**50, "1 PiB"),
    ],
)
def test_format_size(n, text):
    assert format_size(n) == text


# --- every unit, and each boundary of the printing and rounding (expected values written here) ----------------------


def test_a_pebibyte_and_each_decimal_unit_of_a_quantity():
    assert parse_size("1p") == parse_size("1PiB") == 1_125_899_906_842_624
    assert [parse_quantity(f"1{u}") for u in "kMGTP"] == [1000, 10**6, 10**9, 10**12, 10**15]
    assert parse_quantity("1500m") == 2  # milli-bytes, rounded up as apimachinery's Quantity.Value()
    assert parse_quantity(0) == 0  # a limit of nothing is a quantity (not negative)


def test_five_thousand_digits_are_more_than_a_pebibyte_not_a_traceback():
    with pytest.raises(UsageError, match=r"\(5001 characters\) is more than 1 PiB"):
        parse_size("9" * 5000 + "k")  # past int()'s 4300 digits: refused before it is read


def test_a_tmpfs_size_in_bytes_or_k_m_g_up_to_a_pebibyte():
    assert [parse_tmpfs_size(t) for t in ("7", "2k", "64m", "2G", "50%")] == [7, 2048, 67_108_864, 2_147_483_648, None]
    assert parse_tmpfs_size("1048576g") == 2**50 and parse_tmpfs_size("1048577g") is None


@pytest.mark.parametrize(
    "n, text",
    [
        (2**50, "1 PiB"),
        (1023 * 1024**4, "1023 TiB"),
        (10 * GiB + GiB // 4, "10.2 GiB"),  # 10.25: one decimal from 10 (half to even)
        (50 * GiB + GiB // 4, "50.2 GiB"),
        (99 * GiB + GiB // 4, "99.2 GiB"),
        (150 * GiB + GiB // 4, "150 GiB"),  # none from 100
    ],
)
def test_format_size_at_each_boundary(n, text):
    assert format_size(n) == text


def test_nice_sizes_run_to_twelve_tebibytes_then_whole_gibibytes():
    TiB = 1024**4
    assert nice_size(9 * TiB) == 12 * TiB  # 1.5 × 2**23 MiB, the series' last
    assert nice_size(13 * TiB) == 13 * TiB and nice_size(13 * TiB + 1) == 13 * TiB + GiB


def test_one_byte_is_a_size_and_a_whole_float_a_quantity():
    assert parse_size("1") == parse_size(1) == 1
    assert parse_quantity("5") == 5 and parse_quantity(2.0) == 2
    for fraction in (2.5, -2.5):
        with pytest.raises(UsageError, match="is not a Kubernetes quantity"):
            parse_quantity(fraction)


def test_the_last_boundaries_of_reading_and_printing():
    with pytest.raises(UsageError, match="^size: must be greater than zero, got -5$"):
        parse_size(-5)
    with pytest.raises(UsageError) as e:
        parse_quantity("2Pi")  # no name given: the message starts with the value
    assert str(e.value) == "'2Pi' is more than 1 PiB, more memory than any machine has"
    assert (parse_quantity("999m"), parse_quantity("1000m"), parse_quantity("1001m")) == (1, 1, 2)  # rounded up
    assert (format_size(9 * GiB + GiB // 4), format_size(100 * GiB + GiB // 4)) == ("9.25 GiB", "100 GiB")
