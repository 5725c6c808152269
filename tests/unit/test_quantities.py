"""Numbers read as their owners read them. Kubernetes quantities against apimachinery's own table of cases
(tests/data/k8s-quantity: TestQuantityParse of kubernetes/apimachinery, its source in the file), each also with '+'
and '-' as the Go test tries them; digits other than ASCII refused wherever a size is read, as Go's parsers do."""

from __future__ import annotations

from fractions import Fraction

import pytest
import yaml

from shmdoctor.errors import UsageError
from shmdoctor.sizes import MAX_BYTES, parse_quantity, parse_size, parse_tmpfs_size
from tests.helpers import DATA

CASES = yaml.safe_load((DATA / "k8s-quantity" / "apimachinery-quantity-cases.yaml").read_text())


def _bytes(mantissa, exponent: int) -> int | None:
    """Quantity.Value(): the value rounded up to a whole byte; None past what shmdoctor reads (apimachinery's max)."""
    if mantissa == "max":
        return None
    value = Fraction(mantissa) * Fraction(10) ** exponent
    whole = -(-value.numerator // value.denominator)
    return whole if whole <= MAX_BYTES else None


@pytest.mark.parametrize(("text", "mantissa", "exponent"), CASES["valid"], ids=[c[0] for c in CASES["valid"]])
def test_apimachinery_reads_it_so_does_lint(text, mantissa, exponent):
    expected = _bytes(mantissa, exponent)
    for spelled in (text, "+" + text):
        if expected is None:
            with pytest.raises(UsageError, match="more memory than any machine has"):
                parse_quantity(spelled)
        else:
            assert parse_quantity(spelled) == expected, spelled
    if expected:  # negative memory is no memory
        with pytest.raises(UsageError, match="cannot be negative"):
            parse_quantity("-" + text)


@pytest.mark.parametrize("text", CASES["invalid"] + ["１２Gi", "٣Mi", "1 Gi", "e3", "Gi", "+", "1e", "1.5.Gi"])
def test_what_apimachinery_refuses_is_refused(text):
    with pytest.raises(UsageError):
        parse_quantity(text)


def test_an_exponent_past_any_machine_is_refused_without_computing_it():
    with pytest.raises(UsageError, match="more memory than any machine has"):
        parse_quantity("1e999999999")
    assert parse_quantity("1e-999999999") == 1 and parse_quantity("0e999999999") == 0


@pytest.mark.parametrize("text", ["１２g", "٣m", "1２8m"])
def test_docker_and_compose_sizes_take_ascii_digits_only(text):
    """docker's and compose-go's RAMInBytes read Go's \\d: ASCII only; Python's \\d would take every script's."""
    with pytest.raises(UsageError, match="cannot read"):
        parse_size(text)
    assert parse_tmpfs_size(text) is None


def test_a_size_under_a_byte_is_said_to_round_to_zero():
    with pytest.raises(UsageError, match="0.5'? rounds down to zero bytes"):
        parse_size("0.5", what="--sample-bytes")
    with pytest.raises(UsageError, match="must be greater than zero"):
        parse_size("0", what="--sample-bytes")
