"""The /dev/shm of each consumer beside the DataLoader, read from their source (FACTS.md, "Other /dev/shm users").

Pure arithmetic: settings in, a Need (term, bytes, formula) out. Which consumers a target has, and the facts they
read (local ranks, NCCL_* variables, memory), come from the probes and the command line; the rules judge the sum.
"""

from __future__ import annotations

from typing import Literal

from .model import Need
from .sizes import MiB, format_size, page_round

Transport = Literal["shm", "p2p", "cumem-host", "off"]
NcclMode = Literal["auto", "shm", "p2p", "off"]
Server = Literal["vllm", "sglang"]


# --- NCCL (2.30.7 src/transport/shm.cc, src/os/linux.cc, init.cc; measured on two H200s with NCCL 2.28.9,
# docs/gpu-nccl.md: every figure below to the byte) ------------------------------------------------------------------

NCCL_DEFAULT_BUFFSIZE = 4 * MiB  # SIMPLE protocol buffer, NCCL_BUFFSIZE
NCCL_LL = 524_288  # LL protocol buffer
NCCL_LL128 = 4_915_200  # LL128 protocol buffer
NCCL_SEND_SIDE = 4096  # the sender's own small segment
NCCL_FILE_HEADER = 4  # each segment file is 4 B longer than its buffers (errors print 9637892 for 9,637,888)
NCCL_CHANNELS = 4  # channels NCCL built between two H200s over SHM (4 coll, 4 p2p); FACTS.md read 2 as typical
# The proxy ops pool each rank maps per communicator once it talks to other nodes, by NCCL version (newest first).
NCCL_PROXY_POOL = ((2, 28, 34_210_176), (2, 24, 14_156_128), (2, 21, 7_340_384), (0, 0, 4_194_656))


def nccl_segment_bytes(buffsize: int = NCCL_DEFAULT_BUFFSIZE) -> int:
    """One receive segment: a 4 KiB header and the LL, LL128 and SIMPLE buffers. 9,637,888 B by default."""
    return 4096 + NCCL_LL + NCCL_LL128 + buffsize


def nccl_connection_bytes(buffsize: int = NCCL_DEFAULT_BUFFSIZE) -> int:
    """tmpfs one SHM connection takes: its receive and send segment files, each page-rounded.
    9,650,176 B with the default buffer."""
    return page_round(nccl_segment_bytes(buffsize) + NCCL_FILE_HEADER) + page_round(NCCL_SEND_SIDE + NCCL_FILE_HEADER)


def nccl_connections(ranks: int, channels: int, all_to_all: bool) -> int:
    """SHM connections of one communicator of `ranks` local GPUs: the rings (R·C), the trees ((R−1)·C, from three
    ranks: with two, a tree's peer is the ring's, both ways) and, with all-to-all (send/recv), two per ordered pair
    of peers. Measured R=2, C=4: 8, 12 with all-to-all. R=8, C=4: 60, 172 with all-to-all."""
    if ranks < 2:
        return 0
    trees = (ranks - 1) * channels if ranks > 2 else 0
    return ranks * channels + trees + (2 * ranks * (ranks - 1) if all_to_all else 0)


def nccl_proxy_pool(version: tuple[int, int] | None) -> int:
    """The proxy ops pool one rank maps per communicator whose transport goes through NCCL's proxy thread (SHM off
    cuMem, sockets, other nodes); the newest NCCL's when the version is unknown."""
    if version is None:
        return NCCL_PROXY_POOL[0][2]
    return next(size for major, minor, size in NCCL_PROXY_POOL if version >= (major, minor))


def nccl_proxy_bytes(version: tuple[int, int] | None) -> int:
    """tmpfs one proxy pool takes: its file is 4 B longer, page-rounded (34,213,888 B measured, NCCL 2.28.9)."""
    return page_round(nccl_proxy_pool(version) + NCCL_FILE_HEADER)


def nccl_transport(mode: NcclMode, env: dict[str, str]) -> tuple[Transport, str]:
    """The transport two GPUs of one host talk through, and why: the NCCL_* variables decide where set (names only
    in the reason: a value is never repeated), the user's --nccl otherwise; auto assumes P2P (NVLink, PCIe peers)."""
    on = {name for name, value in env.items() if value.strip().lower() not in ("", "0", "false", "no")}
    if "NCCL_SHM_DISABLE" in on and mode in ("auto", "shm"):
        return "off", "NCCL_SHM_DISABLE is set: SHM off, sockets instead (their proxy still maps a pool a rank)"
    if {"NCCL_CUMEM_ENABLE", "NCCL_CUMEM_HOST_ENABLE"} <= on and mode in ("auto", "shm"):
        return "cumem-host", "NCCL_CUMEM_ENABLE and NCCL_CUMEM_HOST_ENABLE are set: cuMem host memory, not /dev/shm"
    if "NCCL_P2P_DISABLE" in on and mode == "auto":
        return "shm", (
            "NCCL_P2P_DISABLE is set: GPUs of one host talk through /dev/shm (NCCL 2.24 and later use cuMem host "
            "memory instead where the driver lets them: 0 B measured on two H200s; NCCL_CUMEM_ENABLE set to 0 "
            "forces /dev/shm)"
        )
    if mode == "auto":
        return "p2p", "assumed P2P (NVLink or PCIe peers); without it NCCL falls back to /dev/shm"
    return mode, f"--nccl {mode}"


def nccl(
    ranks: int,
    transport: Transport,
    *,
    buffsize: int = NCCL_DEFAULT_BUFFSIZE,
    channels: int = NCCL_CHANNELS,
    all_to_all: bool = False,
    nodes: int = 1,
    version: tuple[int, int] | None = None,
) -> Need:
    """NCCL's /dev/shm on one host: the SHM connections when that is the transport (off cuMem), and a proxy ops pool
    per rank wherever the proxy thread carries the traffic: SHM off cuMem, sockets (NCCL_SHM_DISABLE), other nodes."""
    parts, total = [], 0
    if transport == "shm" and ranks > 1:
        conns, each = nccl_connections(ranks, channels, all_to_all), nccl_connection_bytes(buffsize)
        what = "rings" + (" + trees" if ranks > 2 else "") + (" + all-to-all" if all_to_all else "")
        parts.append(f"{conns} connections ({what}, R={ranks}, C={channels}) × {format_size(each)}")
        total += conns * each
    if (transport in ("shm", "off") and ranks > 1) or nodes > 1:
        pool = nccl_proxy_bytes(version)
        parts.append(f"{ranks} ranks × {format_size(pool)} proxy pool")
        total += ranks * pool
    if not parts:
        return Need("nccl", 0, f"0: {transport} transport, no /dev/shm between the {ranks} local GPUs")
    return Need("nccl", total, " + ".join(parts))


# --- vLLM 0.33 (distributed/device_communicators/shm_broadcast.py, executor/multiproc_executor.py) -------------------

VLLM_SCHEDULER_CHUNK = 16 * MiB  # VLLM_MQ_MAX_CHUNK_BYTES_MB
VLLM_RESPONSE_CHUNK = 24 * MiB
TP_GROUP_CHUNK = 4 * MiB  # vLLM's and SGLang's tensor-parallel group broadcast


def _ring(chunk: int, readers: int, chunks: int) -> int:
    """A shm_broadcast ring buffer: (max_chunk_bytes + 1 + readers) × max_chunks, every slot touched."""
    return (chunk + 1 + readers) * chunks


def vllm_buffers(tensor_parallel: int) -> list[tuple[str, int]]:
    """The broadcast rings vLLM's multiproc executor creates at tensor parallel T, in the order it creates them
    (each checked against the free /dev/shm first): the scheduler's queue, one response queue per worker, the TP
    group's queue. T=1 runs in one process: none."""
    t = tensor_parallel
    if t < 2:
        return []
    return (
        [("the scheduler's broadcast queue", _ring(VLLM_SCHEDULER_CHUNK, t, 10))]
        + [(f"worker {i}'s response queue", _ring(VLLM_RESPONSE_CHUNK, 1, 10)) for i in range(t)]
        + [("the tensor-parallel group's queue", _ring(TP_GROUP_CHUNK, t - 1, 6))]
    )


def vllm_refused(tensor_parallel: int, shm_free: int) -> tuple[str, int, int] | None:
    """The first buffer vLLM's startup check refuses with this much free: (its name, its size, what is free then)."""
    for name, size in vllm_buffers(tensor_parallel):
        if size > shm_free:
            return name, size, shm_free
        shm_free -= size
    return None


def vllm(tensor_parallel: int) -> Need:
    """The rings of vllm_buffers, every slot touched. T=8: 2,206,204,202 B."""
    t = tensor_parallel
    if t < 2:
        return Need("vllm", 0, "0: tensor_parallel_size 1 runs in one process")
    return Need(
        "vllm",
        sum(size for _, size in vllm_buffers(t)),
        f"scheduler (16 MiB + 1 + {t}) × 10 + {t} responses (24 MiB + 2) × 10 + TP group (4 MiB + {t}) × 6",
    )


def sglang(tensor_parallel: int) -> Need:
    """SGLang's TP queue (4 MiB + T) × 6; NCCL's share is the nccl term (SGLang sets NCCL_CUMEM_ENABLE=0)."""
    t = tensor_parallel
    if t < 2:
        return Need("sglang", 0, "0: tensor_parallel_size 1 runs in one process")
    return Need("sglang", _ring(TP_GROUP_CHUNK, t - 1, 6), f"TP queue (4 MiB + {t}) × 6")


# --- PostgreSQL 15 (src/backend/executor/nodeHash.c ExecChooseHashTableSize, src/backend/utils/mmgr/dsa.c,
# src/backend/storage/ipc/dsm_impl.c) -----------------------------------------------------------------------------

PG_HASH_MEM_MULTIPLIER = 2.0  # hash_mem_multiplier's default from PostgreSQL 15 (1.0 in 13 and 14): the larger
PG_WORKERS = 2  # max_parallel_workers_per_gather's default
# dsa.c makes an area's segments 1 MiB, doubling every second one (DSA_NUM_SEGMENTS_AT_EACH_SIZE 2), and dsm_impl.c
# posix_fallocate()s each whole in /dev/shm: past a few MiB the segments hold up to half again what is used
PG_SEGMENTS = 1.5


def postgres_hash(work_mem: int, multiplier: float | None = None, workers: int | None = None) -> tuple[int, str]:
    """What one parallel hash join may take of /dev/shm: PostgreSQL lets its shared table grow to the combined
    hash_mem of the participants (space_allowed = work_mem × hash_mem_multiplier × (workers + 1)) before it splits
    it into batches on disk, in segments of its dynamic shared area. Each such join running at once takes its own;
    a skewed one that no batch split shrinks may pass the bound (nodeHash.c: growth disabled)."""
    x = PG_HASH_MEM_MULTIPLIER if multiplier is None else multiplier
    w = PG_WORKERS if workers is None else workers
    table = int(work_mem * x * (w + 1))
    said_x = f"{x:g}" + (" (its default)" if multiplier is None else "")
    said_w = f"{w} workers" + (" (the default per Gather)" if workers is None else "") + " + the leader"
    formula = (
        f"work_mem {format_size(work_mem)} × hash_mem_multiplier {said_x} × ({said_w}) = {format_size(table)} "
        f"of shared hash table, × {PG_SEGMENTS:g} for its segments"
    )
    return int(table * PG_SEGMENTS), formula


# --- Ray 2.60 (_private/utils.py resolve_object_store_memory, services.py determine_plasma_store_config) ------------

RAY_SHARE = 0.3  # DEFAULT_OBJECT_STORE_MEMORY_PROPORTION of the memory available
RAY_SHM_THRESHOLD = 10**10  # REQUIRE_SHM_SIZE_THRESHOLD: above it, a too-small /dev/shm is an error, not /tmp
RAY_MAX = 200 * 10**9  # DEFAULT_OBJECT_STORE_MAX_MEMORY_BYTES
RAY_MIN_STORE = 75 * MiB  # OBJECT_STORE_MINIMUM_MEMORY_BYTES: Ray refuses a smaller store


def ray_default_store(memory_available: int, shm_free: int | None) -> int:
    """Ray's default object store: 30% of the memory available (limit − used, cgroup-aware), capped by what /dev/shm
    has (×0.95, never below 10 GB) and by 200 GB."""
    store = int(memory_available * RAY_SHARE)
    if shm_free is not None:
        store = min(store, max(RAY_SHM_THRESHOLD, int(shm_free * 0.95)))
    return min(store, RAY_MAX)


def ray(store: int, *, given: bool) -> Need:
    """The object store's /dev/shm. Short of it, Ray falls back to /tmp (slow) up to 10 GB, and refuses above."""
    how = "as given" if given else "30% of the memory available, Ray's default"
    return Need("ray", store, f"object store ({how})", fails=store > RAY_SHM_THRESHOLD)


# --- Triton python backend ------------------------------------------------------------------------------------------

TRITON_REGION = MiB  # shm-default-byte-size, growing by shm-growth-byte-size (1 MiB)


def triton(instances: int) -> Need:
    """One shared-memory region a python-backend model instance, 1 MiB at the start (it grows by 1 MiB steps)."""
    return Need(
        "triton", instances * TRITON_REGION, f"{instances} model instances × 1 MiB region (grows in 1 MiB steps)"
    )
