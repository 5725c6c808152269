"""A DataLoader's batch and workers in a pasted command line or config dump (issue 35 item 4): read as the programs
print them, and with the sample's size unknown, the fix says the one thing missing (--sample-bytes) and the command
to give it, never a size."""

import json

import pytest

from shmdoctor.diagnose import scan_text
from tests.helpers import forked_cli

BUS = "RuntimeError: DataLoader worker (pid 4021) is killed by signal: Bus error."

# Each as its program prints it
SAID = {
    # pytorch/vision references/classification/train.py: '-b, --batch-size', '-j, --workers' (argparse)
    "a torchvision reference's command": ("torchrun train.py --model resnet50 --batch-size 64 --workers 8", 64, 8),
    "argparse's Namespace printed": ("Namespace(arch='resnet50', batch_size=256, lr=0.1, workers=16)", 256, 16),
    "a DataLoader call": ("loader = DataLoader(ds, batch_size=32, num_workers=4, pin_memory=True)", 32, 4),
    # mmdetection / mmcv 2.x configs: data = dict(samples_per_gpu=2, workers_per_gpu=2, ...)
    "an mmcv config": ("data = dict(samples_per_gpu=2, workers_per_gpu=2, train=dict(type='CocoDataset'))", 2, 2),
    # transformers' TrainingArguments as printed at start
    "HF TrainingArguments": ("per_device_train_batch_size=8,\ndataloader_num_workers=4,", 8, 4),
    "a YAML config": ("data:\n  batch_size: 16\n  num_workers: 12", 16, 12),
}


@pytest.mark.parametrize(("said", "batch", "workers"), SAID.values(), ids=SAID.keys())
def test_a_loaders_settings_are_read_as_programs_print_them(said, batch, workers):
    clues = scan_text(f"{said}\n{BUS}").clues
    assert (clues.batch_size, clues.num_workers) == (batch, workers)


LOOK_ALIKES = {
    "an eval batch": "per_device_eval_batch_size=128, eval_batch_size=128",
    "PostgreSQL's workers": "max_parallel_workers_per_gather = 4\nWorkers Launched: 4",
    "a batch of none": "batch_size=0",
}


@pytest.mark.parametrize("said", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_what_is_not_a_loaders_setting_is_not_read(said):
    clues = scan_text(f"{said}\n{BUS}").clues
    assert (clues.batch_size, clues.num_workers) == (None, None)


def _fixes(log: str) -> tuple[int, list[dict]]:
    proc = forked_cli("explain", "--format", "json", input_text=log)
    doc = json.loads(proc.stdout)
    return proc.returncode, [fix for f in doc["findings"] if f["severity"] == "error" for fix in f["fixes"]]


def test_with_the_sample_unknown_the_fix_gives_the_command_with_the_one_thing_missing_and_no_size():
    code, fixes = _fixes(f"Namespace(arch='resnet50', batch_size=256, lr=0.1, workers=16)\n{BUS}\n")
    assert code == 1 and all(fix["shm_bytes"] is None for fix in fixes)
    ask = fixes[0]["summary"]
    assert "the log gives --batch-size 256 (line 1), --num-workers 16 (line 1)" in ask
    assert "`shmdoctor explain --batch-size 256 --num-workers 16 --sample-bytes S LOG`" in ask
    _, fixes = _fixes(f"workers: 6\n{BUS}\n")  # what the log does not give is asked too
    assert "`shmdoctor explain --batch-size B --num-workers 6 --sample-bytes S LOG`" in fixes[0]["summary"]
    _, fixes = _fixes(f"{BUS}\n")  # nothing given: the general ask
    assert "give its settings (`explain --batch-size B --num-workers W --sample-bytes S`)" in fixes[0]["summary"]
