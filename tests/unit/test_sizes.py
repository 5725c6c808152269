import re

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.sizes import GiB, KiB, MiB, docker_size, format_size, k8s_quantity, nice_size, parse_quantity, parse_size


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
