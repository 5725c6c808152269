"""The requirement formula of FACTS.md, and the loader's validation."""

from dataclasses import replace

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.loader import LoaderSpec, combined_requirement, inferred_requirement, loader_config, requirement
from shmdoctor.sizes import MiB


@pytest.mark.parametrize(
    "workers, prefetch, pin, ranks, batches",
    [
        (4, None, False, 1, 9),  # the seed: (2·4 + 1) batches, not the folklore 8
        (4, None, True, 1, 8),  # pin_memory copies the held batch out of /dev/shm
        (4, 4, False, 1, 17),
        (1, 1, False, 1, 2),
        (0, None, False, 1, 0),  # no workers: no /dev/shm
        (2, 2, False, 8, 5 * 8),  # eight DDP ranks, eight loaders
    ],
)
def test_requirement_formula(workers, prefetch, pin, ranks, batches):
    need = requirement(
        loader_config(
            batch_size=100,
            num_workers=workers,
            prefetch_factor=prefetch,
            sample_bytes="1MiB",
            pin_memory=pin,
            ranks=ranks,
        )
    )
    assert need.bytes == batches * 100 * MiB
    assert [n.term for n in need.breakdown] == ["dataloader"] and need.breakdown[0].bytes == need.bytes


def test_seed_formula_is_one_batch_short():
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    folklore = 4 * 2 * 100 * MiB  # num_workers × prefetch_factor × batch_size × sample
    assert need.bytes - folklore == 100 * MiB and need.formula == "(2·4 + 1) × 100 MiB"


def test_batches_are_page_rounded():
    need = requirement(loader_config(batch_size=3, num_workers=1, sample_bytes=1000))
    assert need.loader.batch_bytes == 4096 and need.bytes == 3 * 4096


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(batch_size=0, num_workers=1, sample_bytes="1m"), "batch_size"),
        (dict(batch_size=-5, num_workers=1, sample_bytes="1m"), "batch_size"),
        (dict(batch_size=10, num_workers=-1, sample_bytes="1m"), "num_workers"),
        (dict(batch_size=10, num_workers=0, prefetch_factor=2, sample_bytes="1m"), "num_workers > 0"),
        (dict(batch_size=10, num_workers=2, prefetch_factor=0, sample_bytes="1m"), "prefetch_factor"),
        (dict(batch_size=10, num_workers=2), "sample size"),
        (dict(batch_size=None, num_workers=2, sample_bytes="1m"), "--batch-size"),
        (dict(batch_size=10, num_workers=2, sample_bytes="0"), "greater than zero"),
        (dict(batch_size=10, num_workers=2, sample_bytes="1m", ranks=0), "ranks"),
    ],
)
def test_bad_loaders_are_refused(kwargs, words):
    with pytest.raises(UsageError, match=words):
        loader_config(**kwargs)


def test_loader_spec_from_a_label():
    assert LoaderSpec.parse("batch_size=100, num_workers=4,sample_bytes=1MiB,pin_memory=true") == LoaderSpec(
        batch_size=100, num_workers=4, sample_bytes=MiB, pin_memory=True
    )
    assert LoaderSpec.parse("pin-memory=no,ranks=2") == LoaderSpec(pin_memory=False, ranks=2)
    for bad in ("batch_size", "colour=red", "batch_size=ten", "pin_memory=maybe", "sample_bytes=lots"):
        with pytest.raises(UsageError):
            LoaderSpec.parse(bad)


def test_an_empty_spec_is_no_loader_and_a_partial_one_is_refused():
    assert not LoaderSpec().given and LoaderSpec().requirement() is None
    assert not LoaderSpec.parse(" , ").given
    with pytest.raises(UsageError, match="--batch-size"):
        LoaderSpec(ranks=2).requirement()


def test_override_takes_the_given_fields_of_the_other_key_by_key():
    base = LoaderSpec(batch_size=100, num_workers=4, prefetch_factor=4, sample_bytes=MiB, pin_memory=True, ranks=2)
    assert base.override(LoaderSpec()) == base
    assert LoaderSpec().override(base) == base
    assert base.override(LoaderSpec(batch_size=8, pin_memory=False)) == LoaderSpec(
        batch_size=8, num_workers=4, prefetch_factor=4, sample_bytes=MiB, pin_memory=False, ranks=2
    )


def test_measured_tensors_are_each_page_rounded_for_the_batch_size():
    config = loader_config(batch_size=10, num_workers=2, sample_tensors=(3 * 64 * 64 * 4, 8.0, 64 * 64))
    assert config.tensors_per_batch == 3
    assert config.batch_bytes == 10 * 3 * 64 * 64 * 4 + 4096 + 10 * 64 * 64


def test_a_label_overriding_batch_size_resizes_a_measured_batch():
    measured = LoaderSpec(batch_size=64, num_workers=4, sample_tensors=(float(MiB),))
    assert measured.requirement().loader.batch_bytes == 64 * MiB
    assert measured.override(LoaderSpec(batch_size=128)).requirement().loader.batch_bytes == 128 * MiB
    assert measured.override(LoaderSpec(sample_bytes=2 * MiB)).requirement().loader.batch_bytes == 128 * MiB
    # a label that turns workers off drops the command line's prefetch_factor, as PyTorch would require
    prefetching = LoaderSpec(batch_size=64, num_workers=4, prefetch_factor=4, sample_bytes=MiB)
    assert prefetching.override(LoaderSpec(num_workers=0)).requirement().bytes == 0
    # and one that gives both keeps both, for the config to refuse
    with pytest.raises(UsageError, match="num_workers > 0"):
        prefetching.override(LoaderSpec(num_workers=0, prefetch_factor=2)).requirement()


# --- each decision of the loader's arithmetic, expected values written here -----------------------------------------

KEYS = "batch_size, num_workers, pin_memory, prefetch_factor, ranks, sample_bytes"


@pytest.mark.parametrize("text", ["batch_size", "colour=3", "sample_tensors=1"])
def test_a_spec_takes_key_value_pairs_of_its_own_keys_only(text):
    with pytest.raises(UsageError) as e:
        LoaderSpec.parse(text)
    assert str(e.value) == f"loader spec {text!r}: expected key=value with keys {KEYS}"


def test_pytorchs_defaults_where_nothing_is_said():
    config = loader_config(batch_size=1, sample_bytes=4096)  # one sample a batch is a batch
    assert (config.num_workers, config.prefetch_factor, config.tensors_per_batch, config.ranks) == (0, 0, 1, 1)
    assert loader_config(batch_size=1, num_workers=None, sample_bytes=4096).num_workers == 0
    assert loader_config(batch_size=4, num_workers=2, sample_bytes=4096).prefetch_factor == 2


def test_measured_tensors_give_the_sample_and_a_segment_each():
    config = loader_config(batch_size=8, sample_tensors=(1000.5, 24.0))
    assert config.sample_bytes == 1025 and config.tensors_per_batch == 2
    assert config.batch_bytes == 8192 + 4096  # 8004 B and 192 B, each page-rounded


def test_one_batch_of_a_pebibyte_is_the_most():
    assert loader_config(batch_size=1, batch_bytes=2**50).batch_bytes == 2**50
    with pytest.raises(UsageError, match="more memory than any machine has$"):
        loader_config(batch_size=1, batch_bytes=2**50 + 1)


def test_the_formula_names_the_ranks_from_two():
    two = requirement(loader_config(batch_size=1, num_workers=1, sample_bytes=4096, ranks=2))
    assert two.formula == "(2·1 + 1) × 4 KiB × 2 ranks" and two.bytes == 3 * 4096 * 2


TRAIN = loader_config(batch_size=1, num_workers=2, sample_bytes=MiB)  # (2·2 + 1) × 1 MiB: 5 MiB a process
VAL = loader_config(batch_size=1, num_workers=1, sample_bytes=MiB)  # (2·1 + 1) × 1 MiB: 3 MiB


def test_identical_loaders_of_two_processes_are_two_ranks_of_one():
    need = combined_requirement([TRAIN, TRAIN])
    assert (need.bytes, need.ranks, need.loader.ranks, len(need.breakdown)) == (10 * MiB, 2, 2, 1)
    assert need.formula == "(2·2 + 1) × 1 MiB × 2 ranks"


def test_different_loaders_add_up_the_biggest_first_whatever_their_order():
    for loaders in ([VAL, TRAIN, TRAIN], [TRAIN, VAL, TRAIN]):
        need = combined_requirement(loaders)
        assert [n.bytes for n in need.breakdown] == [10 * MiB, 3 * MiB] and need.bytes == 13 * MiB
        assert need.loader == replace(TRAIN, ranks=2) and need.ranks == 2 and need.batches_in_flight == 5
    assert combined_requirement([VAL, TRAIN]).ranks == 1


def test_the_processes_seen_are_the_ranks_with_one_loader_as_with_several():
    """A process whose loader was left out (noted) adds no bytes, but memory of its own: one loader is no exception
    (one loader gave ranks 1 where two gave the processes)."""
    one = combined_requirement([TRAIN], processes=2)
    assert (one.bytes, one.ranks, one.loader, one.formula) == (5 * MiB, 2, TRAIN, "(2·2 + 1) × 1 MiB")
    assert combined_requirement([VAL, TRAIN], processes=3).ranks == 3
    assert combined_requirement([TRAIN, TRAIN], processes=1).ranks == 2  # the loaders' ranks, when more


def test_a_need_inferred_from_the_segments_workers_made():
    assert inferred_requirement({}) is None and inferred_requirement({7: 0, 8: 0}) is None
    need = inferred_requirement({7: 5000, 8: 9000})  # two workers; the biggest segment, 3 pages, a batch
    assert (need.bytes, need.batches_in_flight) == ((2 * 2 + 1) * 12288, 5)
