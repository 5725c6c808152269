"""`shmdoctor check --dataset` on real torch Datasets (tests/loaders/seed.py): measured samples, and bad datasets."""

import json

import pytest

from tests.helpers import assert_one_line_error, run_cli, validate


def test_dataset_is_measured_from_real_samples(torch_module):
    proc = run_cli(
        "check",
        "--batch-size",
        "100",
        "--num-workers",
        "4",
        "--dataset",
        "tests.loaders.seed:seed_set",
        "--format",
        "json",
    )
    loader = validate(json.loads(proc.stdout))["requirement"]["loader"]
    assert loader["sample_bytes"] == 2**20 and loader["batch_bytes"] == 100 * 2**20


def test_nested_samples_count_every_tensor(torch_module):
    # dict{image 3x64x64 f32, label int, extra: (mask 64x64 u8,)}, from a factory: 3 tensors per batch, each rounded
    proc = run_cli(
        "check",
        "--batch-size",
        "10",
        "--num-workers",
        "2",
        "--dataset",
        "tests.loaders.seed:make_nested",
        "--format",
        "json",
    )
    loader = json.loads(proc.stdout)["requirement"]["loader"]
    assert loader["tensors_per_batch"] == 3
    assert loader["batch_bytes"] == 10 * 3 * 64 * 64 * 4 + 4096 + 10 * 64 * 64


@pytest.mark.parametrize(
    "attr, words",
    [("nothing_here", "no attribute"), ("not_a_dataset", "not a dataset"), ("broken", "corrupt record 0")],
)
def test_a_bad_dataset_is_one_line_and_exit_2(attr, words):
    proc = run_cli("check", "--batch-size", "4", "--dataset", f"tests.loaders.seed:{attr}")
    assert_one_line_error(proc, 2, words)
