"""preflight() reads its ranks from torchrun's LOCAL_WORLD_SIZE, and never echoes a bad value back."""

import pytest

from shmdoctor import preflight
from shmdoctor.errors import UsageError

SETTINGS = dict(batch_size=4, num_workers=2, sample_bytes="1MiB")


@pytest.mark.parametrize("value", ["abc", "²", "-1", "3 ", "secret-token-123"])
def test_a_local_world_size_that_is_not_a_count_is_a_usage_error_that_does_not_print_it(monkeypatch, value):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", value)
    with pytest.raises(UsageError) as e:
        preflight(**SETTINGS)
    assert "LOCAL_WORLD_SIZE" in str(e.value) and value.strip() not in str(e.value)


def test_local_world_size_multiplies_the_need_as_ranks_does(monkeypatch):
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    one = preflight(**SETTINGS).requirement
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    three = preflight(**SETTINGS).requirement
    assert three == preflight(**SETTINGS, ranks=3).requirement
    assert three.bytes == 3 * one.bytes
