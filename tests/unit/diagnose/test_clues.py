"""What a log says of the job besides its failure, at the edges of what is read: GPU counts up to 4096 (explain's
--gpus bound), NCCL's channels up to its 64, a count of at most six digits, and in the kernel's OOM report a memory
limit and /dev/shm pages up to 1 PiB. Past an edge a number is not read: the size asked is then the one of a log
that does not say it. Lines are shaped as NCCL (docs/gpu-nccl.md) and the kernel (captured/kernel-oom-shm-fill.log)
print them."""

import pytest

from shmdoctor.diagnose import judge, scan_text
from tests.helpers import place

# NCCL 2.19+'s init line, and the segment two H200s failed at in a 32 MiB /dev/shm (docs/gpu-nccl.md)
INIT = (
    "h:1:2 [{dev}] NCCL INFO comm 0x55 rank {dev} nRanks {n} nNodes {nodes} localRanks {local} localRank {dev} MNNVL 0"
)
SEGMENT = (
    "h:1:2 [0] misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-GAxtlc "
    "(size 9637888), error: No space left on device (28)"
)
OLD_INIT = "h:1:2 [0] NCCL INFO comm 0x7ff1ec001060 rank 0 nranks 2 cudaDev 0 busId 100000 - Init COMPLETE"
CHANNELS = "h:1:2 [0] NCCL INFO {} coll channels, 2 p2p channels, 2 p2p channels per peer"
# 139 MiB: NCCL's whole /dev/shm measured for two H200s over SHM with its 4 channels (docs/gpu-nccl.md)
TWO_GPUS = "NCCL's whole /dev/shm for 2 local GPUs (the log: NCCL's nranks) is 139 MiB"
UNKNOWN = "NCCL's whole /dev/shm is 139 MiB for 2 local GPUs, 813 MiB for 8"


def message(log: str) -> str:
    scanned = scan_text(log)
    (finding,) = judge(scanned.diagnoses(), place({}), clues=scanned.clues).report.findings
    return finding.message


@pytest.mark.parametrize(
    "local, said",
    [
        ("4096", "NCCL's whole /dev/shm for 4096 local GPUs (the log: NCCL's localRanks)"),
        ("4097", UNKNOWN),  # more GPUs than explain's --gpus takes: no count
        ("000008", "NCCL's whole /dev/shm for 8 local GPUs (the log: NCCL's localRanks)"),  # six digits
        ("0000008", UNKNOWN),  # seven: not a count NCCL prints
    ],
)
def test_a_gpu_count_is_read_up_to_4096_and_six_digits(local, said):
    init = INIT.format(dev=0, n=16, nodes=2, local=local)  # two hosts: nRanks is not the local count
    assert said in message(init + "\n" + SEGMENT)


def test_where_two_lines_give_the_same_count_the_first_one_says_where_it_comes_from():
    """Device 1 in the line's prefix, nRanks 2 on one host, localRanks 2: all say two GPUs; localRanks is read first."""
    init = INIT.format(dev=1, n=2, nodes=1, local=2)
    assert scan_text(init).clues.ranks_from == "NCCL's localRanks"
    assert "for 2 local GPUs (the log: NCCL's localRanks)" in message(init + "\n" + SEGMENT)


@pytest.mark.parametrize("channels, read", [(4, 4), (64, 64), (65, None), (999999, None)])
def test_ncclss_channels_are_read_up_to_its_64(channels, read):
    """NCCL builds at most 64 channels (MAXCHANNELS, src/include/device.h); '999999 coll channels' asked 17.6 TiB of
    /dev/shm for two GPUs before it was bounded. Past 64 the size is the one measured with NCCL's own 4."""
    log = "\n".join([OLD_INIT, CHANNELS.format(channels), SEGMENT])
    assert scan_text(log).clues.channels == read
    if read is None or read == 4:
        assert TWO_GPUS in message(log)


# The kernel's OOM report of a memory cgroup (mm/memcontrol.c), as dmesg printed it here
OOM = """[20466.255067] memory: usage {usage}kB, limit {limit}kB, failcnt 0
[20466.255115] shmem {shmem}
[20466.255197] Memory cgroup out of memory: Killed process 7165 (dd) total-vm:3292kB, anon-rss:1024kB, file-rss:848kB, \
shmem-rss:0kB, UID:0 pgtables:44kB oom_score_adj:0"""


def oom_fix(limit: int, shmem: int = 0, usage: int | None = None) -> str:
    log = scan_text(OOM.format(usage=limit if usage is None else usage, limit=limit, shmem=shmem))
    (finding,) = judge(log.diagnoses(), place({"shm": "64g"}), clues=log.clues).report.findings
    return " | ".join(f.summary for f in finding.fixes)


@pytest.mark.parametrize(
    "limit_kb, read",
    [
        (65536, 64 * 2**20),
        (2**40, 2**50),  # 1 PiB exactly
        (2**40 + 1, None),  # 1 kB more: more memory than any machine has
        (9007199254740988, None),  # cgroup v1's 'no limit'
    ],
)
def test_the_memory_limit_hit_is_read_up_to_1_pib(limit_kb, read):
    assert scan_text(OOM.format(usage=1024, limit=limit_kb, shmem=0)).clues.memory_limit == read
    hit = "limit that was hit (read from the kernel's report)"
    assert (hit in oom_fix(limit_kb)) == (read is not None)


def test_the_limit_hit_its_dev_shm_share_and_none_said_where_the_cgroup_held_none():
    """64 MiB hit with no tmpfs page in it: a memory limit above it, holding a process (256 MiB: 320 MiB after
    + 25%, asked as 384 MiB), and no word of /dev/shm; with 62.4 MiB of it, its share is said."""
    assert (
        oom_fix(65536)
        == "memory limit of 384 MiB: more than the 64 MiB limit that was hit (read from the kernel's report) + 25%"
    )
    assert ", which held 62.4 MiB of /dev/shm + 25%" in oom_fix(65536, shmem=65_458_176)


@pytest.mark.parametrize("shmem, read", [(2**50, 2**50), (2**50 + 1, None)])
def test_dev_shm_pages_in_the_cgroup_are_read_up_to_1_pib(shmem, read):
    assert scan_text(OOM.format(usage=65536, limit=65536, shmem=shmem)).clues.shmem == read
    assert ("which held 1 PiB of /dev/shm" in oom_fix(65536, shmem)) == (read is not None)


@pytest.mark.parametrize("usage, read", [(18446744073709551615, 64 * 2**20), (184467440737095516150, None)])
def test_a_byte_count_of_the_report_is_at_most_20_digits_as_a_64_bit_counter_prints(usage, read):
    assert scan_text(OOM.format(usage=usage, limit=65536, shmem=0)).clues.memory_limit == read


@pytest.mark.parametrize(
    ("said", "gpus"),
    [
        ("vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 4", 4),
        ("python -m vllm.entrypoints.openai.api_server -tp 8", 8),
        ("python -m sglang.launch_server --tp-size 2", 2),
        ("llm = LLM(model, tensor_parallel_size=4)", 4),
        ("world_size: 8", 8),
        ("docker run --gpus 2 --shm-size=64m image", 2),
        ("            nvidia.com/gpu: 4", 4),
        ("  requestGPU: 2", 2),
        ("CUDA_VISIBLE_DEVICES=0,1,2 python train.py", 3),
    ],
)
def test_the_gpus_a_pasted_command_or_config_gives_size_nccl(said, gpus):
    """issue 35 item 4: the numbers in the paste; NCCL's whole need is for that many GPUs, said where it comes from."""
    text = message(f"{said}\n{SEGMENT}")
    assert f"for {gpus} local GPUs (the log: " in text, text


@pytest.mark.parametrize("said", ["docker run --gpus all image", "--tp-size auto", "CUDA_VISIBLE_DEVICES= python x"])
def test_a_gpu_option_without_a_count_gives_none(said):
    assert UNKNOWN in message(f"{said}\n{SEGMENT}")


def test_a_helm_chart_said_is_the_kubernetes_form():
    """triton-inference-server/server#4869: 'I installed triton server using helm chart.'"""
    clues = scan_text("I installed triton server using helm chart.\nshm 64M 64M 0 100% /dev/shm").clues
    assert clues.form == "kubernetes" and clues.shm_size == 64 * 2**20
