"""Compose sizes as compose-go reads them (issue 38 item 4): go-units' own tests of RAMInBytes, at the version
compose-go pins (tests/data/go-units, its source and commits in the file), and through lint: a space where compose
takes none, a Kubernetes suffix, a non-ASCII digit refused in one line, exit 2; what compose reads is read alike."""

from __future__ import annotations

import json

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.sizes import MiB, compose_size, ram_in_bytes
from tests.helpers import DATA, assert_one_line_error, forked_cli

GO_UNITS = json.loads((DATA / "go-units" / "ram-in-bytes.json").read_text())
CASES = GO_UNITS["ram_in_bytes"] + GO_UNITS["from_human_size_spellings"]


@pytest.mark.parametrize("text, expected", CASES, ids=[repr(c[0]) for c in CASES])
def test_go_units_own_cases(text, expected):
    if expected is None:
        with pytest.raises(UsageError):
            ram_in_bytes(text)
    else:
        assert ram_in_bytes(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("655360", 655360),  # compose-go's bytes_test.go: a whole number first (strconv.ParseInt)
        ("1g", 1 << 30),
        ("512m", 512 * MiB),
        ("+5m", 5 * MiB),  # strconv.ParseFloat's own grammar: a sign, an exponent, a hexadecimal float, underscores
        ("1e3m", 1000 * MiB),
        ("0x1p4m", 16 * MiB),
        ("1_000", 1000),
        (".5k", 512),
        ("64 ", 64),
        ("5\u212a", 5 * 1024),  # the Kelvin sign: Go's strings.ToLower makes it k
    ],
)
def test_what_compose_reads(text, expected):
    assert compose_size(text) == expected


@pytest.mark.parametrize(
    "size, said",
    [
        ("' 2g'", "cannot read ' 2g' as a size (compose's go-units: invalid size"),
        ("'2g '", "cannot read '2g ' as a size (compose's go-units: invalid size"),
        ("2Gi", "cannot read '2Gi' as a size (compose's go-units: invalid suffix: 'Gi'"),
        ("'２g'", "cannot read '２g' as a size"),
        ("1e400", "cannot read '1e400' as a size"),
        ("'0.5'", "'0.5' rounds down to zero bytes"),
    ],
)
def test_lint_refuses_a_size_compose_refuses(tmp_path, size, said):
    (tmp_path / "compose.yml").write_text(f"services:\n  t:\n    image: pytorch/pytorch\n    shm_size: {size}\n")
    proc = forked_cli("lint", str(tmp_path / "compose.yml"))
    assert_one_line_error(proc, 2, f"shm_size: {said}")


def test_lint_reads_a_size_compose_reads(tmp_path):
    (tmp_path / "compose.yml").write_text("services:\n  t:\n    image: pytorch/pytorch\n    shm_size: '1.5 gb'\n")
    proc = forked_cli("lint", str(tmp_path / "compose.yml"), "--format", "json")
    assert json.loads(proc.stdout)["reports"][0]["shm"]["size_bytes"] == 3 * 2**29
