"""Which scrapes get gzip: Accept-Encoding read as RFC 9110 (12.5.3) says, the cases of its text and what clients
send (Prometheus: `gzip`; curl --compressed: `deflate, gzip, br, zstd`)."""

import pytest

from shmdoctor.exporter.serve import accepts_gzip


@pytest.mark.parametrize(
    "header",
    ["gzip", "GZIP", "x-gzip", "deflate, gzip, br, zstd", "gzip;q=0.5", "gzip; q=1.0", "*", "*;q=0.1",
     "gzip;q=0.001", "identity;q=0, gzip"],
)  # fmt: skip
def test_gzip_is_sent_where_accepted(header):
    assert accepts_gzip(header)


@pytest.mark.parametrize(
    "header",
    ["", "identity", "deflate, br", "gzip;q=0", "gzip;q=0.000", "gzip; q=0, *", "*;q=0", "gzip;q=2", "gzip;q=nan",
     "gzip;q=١", "gzipx", "x" * 100_000, "br, " * 100 + "gzip"],
)  # fmt: skip
def test_gzip_is_not_sent_where_refused_or_not_asked(header):
    """q=0 refuses; a qvalue that is not one (2, nan, a non-ASCII digit) refuses; past 64 codings nothing is read."""
    assert not accepts_gzip(header)


def test_the_64th_coding_is_read_and_the_65th_is_not():
    assert accepts_gzip("br, " * 63 + "gzip")
    assert not accepts_gzip("br, " * 64 + "gzip")


@pytest.mark.parametrize("parameter", ["level=0", "x=0", "a=0", "Q=1"])
def test_only_q_is_a_weight(parameter):
    """RFC 9110's weight is `;q=` (case-insensitive); another parameter is no weight, so gzip stays acceptable."""
    assert accepts_gzip(f"gzip;{parameter}")
