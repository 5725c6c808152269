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
