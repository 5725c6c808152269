"""The loader options, read into a LoaderSpec: PyTorch's defaults count as not given, so a label fills them."""

from __future__ import annotations

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.loader import LoaderSpec
from shmdoctor.options import loader_spec
from shmdoctor.sizes import MiB

NONE_GIVEN = dict(
    batch_size=None, num_workers=None, prefetch_factor=None, sample_bytes=None, dataset=None, pin_memory=False, ranks=1
)


def test_the_defaults_are_no_loader():
    spec = loader_spec(**NONE_GIVEN)
    assert spec == LoaderSpec() and not spec.given and spec.requirement() is None


def test_given_options_are_the_spec_and_a_label_overrides_them_key_by_key():
    spec = loader_spec(**dict(NONE_GIVEN, batch_size=100, num_workers=4, sample_bytes="1MiB", ranks=2))
    assert spec == LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB, ranks=2)
    labelled = spec.override(LoaderSpec.parse("num_workers=2,pin_memory=true"))
    assert labelled.requirement().bytes == 2 * 2 * 100 * MiB * 2  # (2·2 + 0) batches, pinned, of 100 MiB, 2 ranks


@pytest.mark.parametrize(
    "given, words",
    [
        (dict(sample_bytes="1m", dataset="pkg:ds", batch_size=8), "not both"),
        (dict(dataset="pkg:ds"), "--dataset needs --batch-size"),
        (dict(sample_bytes="12xb", batch_size=8), "sample_bytes: cannot read '12xb'"),
    ],
)
def test_bad_options_are_one_line_usage_errors(given, words):
    with pytest.raises(UsageError, match=words):
        loader_spec(**dict(NONE_GIVEN, **given))
