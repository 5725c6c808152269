"""run reads the loaders of a real torch child without loader options: the seed loader, batches of other shapes, a
collate of its own, spawned workers, and a 2-rank torchrun job (gloo, on the CPU)."""

import json
import sys

from tests.helpers import REPO, run_cli, validate

MiB, KiB, PAGE = 2**20, 2**10, 4096
SHAPES = str(REPO / "tests" / "loaders" / "shapes.py")


def run(tmp_path, *cmd: str, options: tuple[str, ...] = ()) -> tuple[object, dict]:
    report = tmp_path / "run.json"
    proc = run_cli("run", *options, "--report", str(report), "--", *cmd, timeout=600)
    return proc, validate(json.loads(report.read_text()))


def test_the_seed_loader_is_read_and_its_need_computed(tmp_path):
    proc, doc = run(tmp_path, sys.executable, str(REPO / "tests/loaders/failing.py"), "seed", "--batches", "2")
    assert proc.returncode == 0, proc.stderr
    [loader] = doc["loaders"]
    assert (loader["batch_size"], loader["num_workers"], loader["prefetch_factor"]) == (100, 4, 2)
    assert loader["batch_bytes"] == 100 * MiB and loader["segments"] == 1 and loader["workers_measured"] >= 1
    assert doc["need_source"] == "read"
    assert doc["explanation"]["requirement"]["bytes"] == (2 * 4 + 1) * 100 * MiB
    assert "num_workers=4" in proc.stderr and "the loaders' need 900 MiB" in proc.stderr


def test_dict_samples_custom_collate_and_spawned_workers_are_measured(tmp_path):
    image = 8 * 3 * 64 * 64 * 4  # the stacked images: 384 KiB, whole pages
    for mode, nbytes, segments in (("dict", image + PAGE, 2), ("spawn", image + PAGE, 2), ("custom", image, 1)):
        proc, doc = run(tmp_path, sys.executable, SHAPES, mode)
        assert proc.returncode == 0 and proc.stdout == f"{mode}: 4 batches\n", proc.stderr
        [loader] = doc["loaders"]
        assert (loader["batch_bytes"], loader["segments"]) == (nbytes, segments), mode
        assert doc["explanation"]["requirement"]["bytes"] == (2 * 2 + 1) * nbytes


def test_no_instrument_reads_nothing(tmp_path):
    proc, doc = run(tmp_path, sys.executable, SHAPES, "dict", options=("--no-instrument",))
    assert proc.returncode == 0 and doc["loaders"] == [] and doc["instrumentation"] is None
    assert doc["need_source"] is None


def test_two_torchrun_ranks_on_gloo_count_both_ranks(tmp_path):
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc, doc = run(tmp_path, *torchrun, SHAPES, "ddp")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == ["rank 0: 1310720", "rank 1: 1310720"]  # 2 × 40 × 16384 ones
    assert sorted(loader["rank"] for loader in doc["loaders"]) == [0, 1]
    batch = 10 * 64 * KiB  # 640 KiB, whole pages
    assert all(loader["batch_bytes"] == batch for loader in doc["loaders"])
    need = doc["explanation"]["requirement"]
    assert need["bytes"] == 2 * (2 * 2 + 1) * batch and need["ranks"] == 2
