"""The size a failure text needs where no loader is given: NCCL's measured model for the local GPUs (from --gpus, the
log or the facts), a server's rings for its ranks, the bytes the text names on top of run's peak, more than a /dev/shm
the text says it had; and the words that say where the number comes from. Every figure is worked out here from
FACTS.md's measured bytes: an NCCL connection 9,650,176 B, a proxy pool 34,213,888 B a rank (NCCL 2.28); a vLLM/SGLang
ring (max_chunk_bytes + 1 + readers) × max_chunks."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from shmdoctor.diagnose import Measured, judge, scan_text
from shmdoctor.model import Facts, Finding, Ipc, Memory, Shm, Target
from shmdoctor.probe.docker import facts_from_inspect
from shmdoctor.sizes import GiB, MiB

# docker run with the default 64 MiB /dev/shm, its use unknown (inspect)
DEFAULT = facts_from_inspect(json.loads((Path(__file__).parents[2] / "data/inspect/default.json").read_text())).facts
# ai-dynamo/dynamo#1408
SEGMENT = "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-roxxN4 (size 9637888), error: x"
VLLM = "RuntimeError: Insufficient space in /dev/shm for psm_1a2b3c4d: {} MiB required, {} MiB free. Increase /dev/shm"
SGLANG = (
    "WARNING posix_fallocate failed for multimodal tensor, falling back to pickle. Consider increasing /dev/shm size"
)
# triton-inference-server/server#6195, its size in bytes
TRITON = (
    "UNAVAILABLE: Internal: Unable to initialize shared memory key 'triton_python_backend_shm_region_3' to requested "
    "size ({} bytes). If you are running Triton inside docker, use '--shm-size' flag to control the shared memory "
    "region size. Error: No space left on device"
)


def machine(size: int, used: int = 0) -> Facts:
    return Facts(Target("local", "node"), Shm(True, size, used, size - used, "system"), Ipc("host"), Memory(None, 0))


def finding(text: str, facts: Facts = DEFAULT, **kw) -> Finding:
    log = scan_text(text)
    (found,) = judge(log.diagnoses(), facts, clues=log.clues, **kw).report.findings
    return found


def test_nccl_with_nothing_telling_its_gpus_needs_eight_with_all_to_all():
    # rings 8 × 4, trees 7 × 4, all-to-all 2 × 8 × 7: 172 connections × 9,650,176 B, and 8 proxy pools × 34,213,888 B:
    # 1,933,541,376 B, 1.80 GiB (nine GPUs would be 2.19 GiB); × 1.25: 3 GiB
    found = finding(SEGMENT)
    assert "; needs ≥ 1.8 GiB" in found.message and found.fixes[0].shm_bytes == 3 * GiB
    assert "1.8 GiB needed (NCCL's measured model for 8 GPUs with all-to-all: nothing tells" in found.fixes[0].summary


@pytest.mark.parametrize(
    ("text", "facts", "ranks_from"),
    [
        ("h:1:2 [0] " + SEGMENT, DEFAULT, None),  # device 0 named: one GPU at least, not a count
        ("h:1:2 [3] " + SEGMENT, DEFAULT, "the log: the device in NCCL's line prefix"),
        (SEGMENT, replace(DEFAULT, gpu_count=1), None),  # one GPU where the facts are of: no peers there
        (SEGMENT, replace(DEFAULT, gpu_count=4), "the GPUs of the place the facts are of"),
        (SEGMENT, replace(DEFAULT, gpus="0,1,2,3"), "the GPUs of the place the facts are of"),
    ],
)
def test_ncclss_gpus_are_counted_from_two_in_the_log_or_the_facts(text, facts, ranks_from):
    """Four GPUs: rings 4 × 4 and trees 3 × 4, 28 connections, and 4 proxy pools: 407,060,480 B, 388 MiB (× 1.25:
    512 MiB)."""
    grow = finding(text, facts).fixes[0]
    if ranks_from is None:
        assert grow.shm_bytes == 3 * GiB and "8 GPUs with all-to-all: nothing tells their number" in grow.summary
    else:
        assert grow.shm_bytes == 512 * MiB
        assert f"388 MiB needed (NCCL's measured model for 4 local GPUs, their number from {ranks_from})" in (
            grow.summary
        )


@pytest.mark.parametrize(
    ("text", "gpus", "needed", "evidence"),
    [
        # (16 MiB + 1 + 8) × 10 + 8 × (24 MiB + 2) × 10 + (4 MiB + 8) × 6 = 2,206,204,202 B, more than the 16 MiB said
        (VLLM.format("16.0", "10.0"), 8, "2.05 GiB", "vllm's rings for 8 ranks from --gpus, or the log's size"),
        (SGLANG, 8, "24 MiB", "sglang's rings for 8 ranks from --gpus, or the log's size"),  # (4 MiB + 8) × 6
        # the 2,000 MiB the text names, more than vLLM's rings at T=2 (664 MiB)
        (VLLM.format("2000.0", "60.0"), 2, "1.95 GiB", "vllm's rings for 2 ranks from --gpus, or the log's size"),
        (VLLM.format("161.0", "60.2"), 1, "161 MiB", "read from the log"),  # T=1 runs in one process: no ring
    ],
)
def test_a_servers_need_is_its_rings_for_its_ranks_or_the_size_the_text_names_if_larger(text, gpus, needed, evidence):
    found = finding(text, gpus=gpus)
    assert f"; needs ≥ {needed}" in found.message and f"{needed} needed ({evidence}" in found.fixes[0].summary


def test_sglang_on_one_gpu_has_no_ring_to_need_only_the_one_thing_to_know():
    """Bug: `--gpus 1` made SGLang's need its rings at T=1, 0 B ('needs ≥ 0 B, which fits the 64 MiB free here: the
    log comes from a place with less'); one process has no ring, so nothing in the text gives a need."""
    found = finding(SGLANG, gpus=1)
    assert "needs ≥" not in found.message
    assert found.fixes[0].shm_bytes is None and "more than" not in found.fixes[0].summary


@pytest.mark.parametrize(
    ("text", "gpus", "shm_bytes"),
    [
        # vLLM prints one decimal: 60.04 MiB required of 60.01 MiB free reads 60.0 and 60.0; more than it had is
        # needed: the 60 MiB it had and the 60 MiB it asked (120 MiB × 1.25 = 150 MiB: 192 MiB)
        (VLLM.format("60.0", "60.0"), None, 192 * MiB),
        # a text that names no need of its own, and rings (664 MiB at T=2) within what it had: what it had, to the
        # byte: ⌊819.2 MiB⌋ = 858,993,459 B, × 1.25 = 1,073,741,823 B fits 1 GiB; 858,993,460 B does not
        (VLLM.format("0.0", "819.2"), 2, 1 * GiB),
        (VLLM.format("0.0", "819.2000008"), 2, 3 * GiB // 2),
    ],
)
def test_a_need_within_the_dev_shm_the_text_says_it_had_is_more_than_that(text, gpus, shm_bytes):
    assert finding(text, machine(64 * GiB), gpus=gpus).fixes[0].shm_bytes == shm_bytes


@pytest.mark.parametrize(
    ("asked", "shm_bytes"),
    [(53_687_091, 64 * MiB), (53_687_092, 96 * MiB)],  # × 1.25: 67,108,863 B, then 67,108,865 B (64 MiB + 1)
)
def test_the_bytes_a_text_asks_are_its_need_to_the_byte(asked, shm_bytes):
    grow = finding(TRITON.format(asked), machine(32 * MiB)).fixes[0]
    assert grow.shm_bytes == shm_bytes and "51.2 MiB needed (read from the log)" in grow.summary


def test_under_run_the_need_is_the_peak_plus_what_the_text_could_not_have():
    """64 MiB in use at the peak and a 64 MiB pool refused in a 96 MiB /dev/shm: 128 MiB, above the 96 it died in."""
    measured = Measured(peak_bytes=64 * MiB, size_bytes=96 * MiB, peak_t=1.0, elapsed=2.0)
    found = finding(TRITON.format(64 * MiB), machine(96 * MiB, used=64 * MiB), measured=measured)
    assert "; needs ≥ 128 MiB" in found.message
    assert "128 MiB needed (the peak measured + the size the log says could not be had)" in found.fixes[0].summary
