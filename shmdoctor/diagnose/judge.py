"""The text of a failure against the facts of the place it ran in: which diagnoses stand, which the facts contradict
(cause `not-shm`), and the findings and fixes of the report. Pure: the probes happened before."""

from __future__ import annotations

import signal
from dataclasses import dataclass, replace
from typing import ClassVar

from .. import capacity, consumers, fixes
from ..exits import ExitCode
from ..limits import MAX_BYTES
from ..model import ENGINE_DEFAULT_SHM, SEVERITY_RANK, Facts, Finding, Fix, Report, Requirement
from ..probe.workload import gpu_count
from ..sizes import GiB, MiB, format_size, nice_size, page_floor
from .catalogue import BY_ID, SHM_CAUSES
from .clues import Clues
from .place import Place, here
from .scan import Diagnosis

# A bus error with this much /dev/shm free where it ran is not /dev/shm: a mapped file (LMDB, np.memmap, a file on a
# network volume truncated under it: XPixelGroup/BasicSR#59 had 64 GiB of shm). No DataLoader of common settings
# holds this much in flight; give the loader (or run it under `shmdoctor run`) to judge a bigger one.
PLENTY_FREE = 16 * GiB
# NCCL's SHM transport off cuMem, 8 ranks with all-to-all: 172 connections of ~9.2 MiB and a proxy pool a rank, 1.8 GiB
# (consumers.nccl, measured to the byte for two ranks): the size to ask when none is known. A /dev/shm at least
# NCCL_ROOM does not run out for NCCL alone: its 'unhandled system error' is something else.
NCCL_ALL_TO_ALL_8 = consumers.nccl(8, "shm", all_to_all=True).bytes
NCCL_ROOM = 2 * GiB
FULL_SLACK = 2 * MiB  # a measured peak within this of the size filled it (page and rounding slack)


@dataclass(frozen=True)
class Exit:
    """How the process ended: as the engine tells (State) or as `run` saw its child."""

    code: int | None  # the exit code, 128+N for a signal (as a shell and the engine report it)
    oom_killed: bool | None = None  # the engine's State.OOMKilled; None where it is not known
    seen_by: str = "the exit status"

    @property
    def signal(self) -> int | None:
        return self.code - 128 if self.code is not None and 128 < self.code < 160 else None


@dataclass(frozen=True)
class Measured:
    """What `run` sampled while the command ran."""

    peak_bytes: int
    size_bytes: int | None
    peak_t: float  # seconds after start
    elapsed: float  # seconds the command ran
    memory_peak: int | None = None
    start_bytes: int = 0  # in use when it started (a shared /dev/shm: others' segments)

    @property
    def filled(self) -> bool:
        return self.size_bytes is not None and self.peak_bytes >= self.size_bytes - FULL_SLACK


@dataclass(frozen=True)
class Explanation:
    """explain's document: the report (facts, findings, fixes) and the diagnoses behind it."""

    kind: ClassVar[str] = "explain"
    report: Report
    diagnoses: tuple[Diagnosis, ...]
    exit: Exit | None = None
    measured: Measured | None = None
    source: str = ""  # what was read: a file, stdin, a container's log, a command's stderr
    place: Place | None = None  # where it ran, as far as known; None: the facts' own (here)

    @property
    def shm_diagnoses(self) -> tuple[Diagnosis, ...]:
        return tuple(d for d in self.diagnoses if d.cause in SHM_CAUSES)

    @property
    def exit_code(self) -> ExitCode:
        """1 when a shared-memory cause stands; 0 when none, or when the facts say it is not /dev/shm."""
        return ExitCode.FINDING if self.shm_diagnoses else ExitCode.OK


def from_exit(ended: Exit) -> Diagnosis | None:
    """The exit itself as a diagnosis: an OOM kill the engine saw, a SIGKILL, a SIGBUS."""
    if ended.oom_killed:
        sig_id, what = "container-oom-killed", f"State.OOMKilled=true, ExitCode {ended.code}"
    elif ended.signal == signal.SIGKILL:
        sig_id, what = "exit-sigkill", f"{ended.seen_by}: {ended.code} (SIGKILL)"
    elif ended.signal == signal.SIGBUS:
        sig_id, what = "exit-sigbus", f"{ended.seen_by}: {ended.code} (SIGBUS)"
    else:
        return None
    sig = BY_ID[sig_id]
    return Diagnosis(sig.id, sig.cause, sig.consumer, None, what)


def _not_shm(d: Diagnosis, reason: str) -> Diagnosis:
    return replace(d, cause="not-shm", reason=reason)


# How to tell a bare NCCL system error: its own lines with NCCL_DEBUG=INFO (src/misc/shmutils.cc, include/shm.h)
NCCL_HOW_TO_TELL = (
    "rerun with NCCL_DEBUG=INFO: 'failed to extend /dev/shm/nccl-…', 'Error while creating shared memory segment' or "
    "'Call to posix_fallocate failed' say it is /dev/shm (NCCL's SHM transport takes 139 MiB for two GPUs); "
    "'NET/IB', 'socket' or 'Cuda failure' lines say what else failed"
)


def _ambiguous(d: Diagnosis, known: str) -> Diagnosis:
    """A bare NCCL system error with no shm line: /dev/shm is one cause of several (sockets, InfiniBand registration,
    CUDA); a small /dev/shm where the text is read or an unknown one does not decide it (issue 35 item 6)."""
    return replace(
        d, cause="ambiguous", reason=f"{known}: NCCL failed a system call, not said which; {NCCL_HOW_TO_TELL}"
    )


def _weigh_here(d: Diagnosis, facts: Facts, ended: Exit | None, measured: Measured | None, need: Requirement | None):
    """An ambiguous text against the facts of the place it ran in, probed: kept (with what supports it) or turned
    into not-shm (with why)."""
    shm, sig = facts.shm, BY_ID[d.signature]
    size = format_size(shm.size_bytes)
    if d.cause == "memory-limit":
        if ended is not None and ended.oom_killed is False and ended.seen_by.startswith("the engine"):
            return _not_shm(
                d,
                "killed, but not by the OOM killer (State.OOMKilled=false): a kill from outside "
                "(docker kill, a stop past its timeout, a scheduler)",
            )
        if ended is not None and ended.oom_killed:
            return replace(d, reason="the engine says the container was OOM-killed (State.OOMKilled=true)")
        limit = facts.memory.limit_bytes
        if limit is None:
            return _not_shm(
                d,
                "no memory limit applies here: a SIGKILL is the kernel's OOM killer for the whole "
                "machine's memory, or a kill from outside, not /dev/shm",
            )
        # What /dev/shm can hold is its size (a peak sampled before a kill is only a lower bound)
        held = shm.size_bytes if shm.size_bytes is not None else (measured.peak_bytes if measured else None)
        room = capacity.memory_room(replace(facts, memory=replace(facts.memory, used_bytes=0)))
        if held is not None and room is not None and held < room // 4:
            what = "is" if shm.size_bytes is not None else "peaked at"
            return _not_shm(
                d,
                f"/dev/shm {what} {format_size(held)}, too little to take the memory limit "
                f"({format_size(limit)}) over: the processes' own memory did",
            )
        return replace(
            d, reason=f"a memory limit of {format_size(limit)} applies and /dev/shm ({size}) counts toward it"
        )
    if d.cause == "shm-missing":  # torch-shm-missing, the one ambiguous text of it
        if shm.present and not shm.read_only:
            return _not_shm(d, f"/dev/shm exists here ({size}): a file other than a segment is missing")
        return d
    # shm-space, the one cause left of an ambiguous text.
    # Not seen full proves nothing: a worker fills /dev/shm and dies of it between two samples, and its pages are
    # freed with it (seen here: 62.5 MiB filled and a SIGBUS within 0.3 s). Seen full confirms; else the facts decide.
    if measured is not None and measured.filled:
        return replace(
            d,
            reason=f"/dev/shm reached {format_size(measured.peak_bytes)} of "
            f"{format_size(measured.size_bytes)}, {measured.elapsed - measured.peak_t:.1f} s before the end",
        )
    if not shm.present:
        return replace(d, cause="shm-missing", reason="there is no /dev/shm here (--ipc=none)")
    if sig.consumer == "nccl":
        if shm.size_bytes is not None and shm.size_bytes >= NCCL_ROOM:
            return _not_shm(
                d,
                f"/dev/shm is {size} here, more than NCCL's SHM transport takes (~9.2 MiB a "
                "connection): rerun with NCCL_DEBUG=INFO for the failing call (sockets, IB, CUDA)",
            )
        return _ambiguous(d, f"/dev/shm is {size} here")
    available = capacity.shm_free(facts)
    wanted = need.bytes if need else None
    if wanted is not None and available is not None and wanted <= available:
        return _not_shm(
            d,
            f"the loader needs {format_size(wanted)} and /dev/shm has {format_size(available)} "
            "free here: a bus error then comes from another mapped file",
        )
    if wanted is None and available is not None and available >= PLENTY_FREE:
        free = "free" if shm.free_bytes is not None else "in size"
        other = (
            "a worker gone without a word is then the OOM killer (dmesg says) or a crash in the worker"
            if d.signature == "torch-worker-exited"
            else "a bus error then comes from another mapped file (LMDB, np.memmap, a file on a network volume)"
        )
        return _not_shm(d, f"/dev/shm has {format_size(available)} {free} here: {other}")
    if measured is not None and measured.size_bytes:
        return replace(
            d,
            reason=f"/dev/shm is {format_size(measured.size_bytes)}; the samples saw at most "
            f"{format_size(measured.peak_bytes)}: a fill and a death between two samples free their pages unseen",
        )
    return d


def _weigh(d: Diagnosis, place: Place, ended, measured, need, job: Job) -> Diagnosis:
    if place.here:
        return _weigh_here(d, place.facts, ended, measured, need)
    return _weigh_elsewhere(d, place, need, job)


# Where the place is not known, what tells: said in the condition of each ambiguous text
DF_THERE = "`df -h /dev/shm` there tells"
MEMORY_THERE = "`dmesg | grep -i oom` there tells"


def _weigh_elsewhere(d: Diagnosis, place: Place, need: Requirement | None, job: Job) -> Diagnosis:
    """An ambiguous text from a place that is not this one: weighed against what is known of it (stated, or said by
    the text), never against this machine; where the place does not tell, kept with the condition that makes it so."""
    facts, sig = place.facts, BY_ID[d.signature]
    size = facts.shm.size_bytes
    said = f"/dev/shm where it ran was {format_size(size)} ({place.said})" if size is not None else ""
    if d.cause == "memory-limit":
        limit = facts.memory.limit_bytes
        if limit is not None:
            return replace(
                d, reason=f"a memory limit of {format_size(limit)} applied where it ran and /dev/shm counts toward it"
            )
        return replace(
            d,
            reason="if a memory limit applied where it ran (--memory, a pod's limits.memory), /dev/shm's pages count "
            f"toward it; without one the machine's OOM killer or a kill from outside did it: {MEMORY_THERE}",
        )
    if d.cause == "shm-missing":  # torch-shm-missing: a missing file, a missing /dev/shm only where there was none
        if size is not None:
            return _not_shm(d, f"{said}: a file other than a segment is missing")
        return replace(
            d,
            reason="if there was no /dev/shm where it ran (--ipc=none, a chroot, AWS Lambda) this is it; else a "
            f"file other than a segment is missing: {DF_THERE}",
        )
    wanted = _need_bytes(d, facts, None, need, job)
    if sig.consumer == "nccl" and size is not None and size >= NCCL_ROOM:
        return _not_shm(
            d,
            f"{said}, more than NCCL's SHM transport takes: rerun with NCCL_DEBUG=INFO for the failing call "
            "(sockets, IB, CUDA)",
        )
    if sig.consumer == "nccl" and size is None:
        return _ambiguous(d, "where it ran is not known")
    if sig.consumer == "nccl":
        return replace(d, reason=f"{said}, less than NCCL's SHM transport takes for two GPUs; {NCCL_HOW_TO_TELL}")
    if size is None:
        docs = DOCS_SIZE[sig.consumer][0] if sig.consumer in DOCS_SIZE else None  # what its docs ask, where unknown
        below = f"below {format_size(wanted or docs)}" if wanted or docs else "small"
        other = (
            f"with {format_size(DOCS_SIZE['chromium'][0])} or more the tab crashed for another reason (its memory, "
            "the GPU process)"
            if sig.consumer == "chromium"
            else f"with {format_size(PLENTY_FREE)} or more free it is another mapped file"
        )
        return replace(
            d,
            reason=f"if /dev/shm where it ran was {below} — containers get 64 MiB by default — this is it; {other}: "
            f"{DF_THERE}",
        )
    if wanted is not None and wanted <= size:
        return _not_shm(
            d, f"it needs {format_size(wanted)} and {said}: a bus error then comes from another mapped file"
        )
    if wanted is None and size >= PLENTY_FREE:
        return _not_shm(
            d, f"{said}: a bus error then comes from another mapped file (LMDB, np.memmap, a file on a network volume)"
        )
    return replace(d, reason=said)


def _one_way(found: list[Diagnosis], weighed: tuple[Diagnosis, ...]) -> tuple[Diagnosis, ...]:
    """One failure is never named both ways: where the text itself says /dev/shm ran out (a certain shm-space), an
    ambiguous shm-space text of the same log (the worker's bus error above PyTorch's ENOSPC) is that failure too."""
    certain = next((d for d in weighed if d.cause == "shm-space" and not BY_ID[d.signature].ambiguous), None)
    if certain is not None:
        said = f"line {certain.line} says /dev/shm ran out: the same failure" if certain.line else ""
        weighed = tuple(
            replace(before, reason=said) if after.cause == "not-shm" and before.cause == "shm-space" else after
            for before, after in zip(found, weighed)
        )
    # A bare NCCL system error beside NCCL's own shared-memory failure in the same log (a bus error in its frames,
    # its ENOSPC) is that failure, not another one left ambiguous
    nccl = next((d for d in weighed if d.consumer == "nccl" and d.cause == "shm-space" and d.line), None)
    if nccl is None:
        return weighed
    same = f"line {nccl.line} says NCCL's shared memory failed: the same failure"
    return tuple(
        replace(d, cause="shm-space", reason=same) if d.cause == "ambiguous" and d.consumer == "nccl" else d
        for d in weighed
    )


@dataclass(frozen=True)
class Job:
    """What is known of the job besides the failure text: the local GPUs (from --gpus, the log, or the facts) and
    NCCL's channels from the log."""

    ranks: int | None = None
    ranks_from: str = ""
    channels: int | None = None
    memory_limit: int | None = None  # the memory cgroup's limit the kernel's OOM report says was hit
    shmem: int | None = None  # and the tmpfs (/dev/shm) pages in it then
    need_bytes: int | None = None  # the loaders' need shmdoctor run printed in the log
    need_from: str = ""
    work_mem: int | None = None  # PostgreSQL's settings the log gives (clues.py)
    hash_mem_multiplier: float | None = None
    pg_workers: int | None = None
    pg_said: str = ""
    loader: tuple[tuple[str, int, str], ...] = ()  # a DataLoader's settings the log gives: (option, value, where)

    @classmethod
    def of(cls, facts: Facts, clues: Clues | None = None, gpus: int | None = None) -> Job:
        if clues is None:
            clues = Clues()
        read = cls(None, "", clues.channels, clues.memory_limit, clues.shmem, clues.need_said, clues.need_said_from)
        read = replace(
            read,
            work_mem=clues.work_mem,
            hash_mem_multiplier=clues.hash_mem_multiplier,
            pg_workers=clues.pg_workers,
            pg_said="; ".join(f"{name} {where}" for name, where in clues.pg_said.items()),
            loader=tuple(
                (option, value, clues.loader_said[name])
                for option, name, value in (
                    ("--batch-size", "batch_size", clues.batch_size),
                    ("--num-workers", "num_workers", clues.num_workers),
                )
                if value is not None
            ),
        )
        if gpus:
            return replace(read, ranks=gpus, ranks_from="--gpus")
        if (clues.ranks or 0) >= 2:  # one device named is a lower bound, not a count
            return replace(read, ranks=clues.ranks, ranks_from=f"the log: {clues.ranks_from}")
        here = facts.gpu_count or gpu_count(facts.gpus)
        if here and here >= 2:
            return replace(read, ranks=here, ranks_from="the GPUs of the place the facts are of")
        return read

    def nccl(self) -> int | None:
        """NCCL's whole /dev/shm for these GPUs (the measured model: rings, trees, a proxy pool a rank), never one
        segment; no fewer channels than measured (4): a log's count is of one communicator at its start."""
        if self.ranks is None:
            return None
        channels = max(self.channels or 0, consumers.NCCL_CHANNELS)
        return consumers.nccl(self.ranks, "shm", channels=channels).bytes

    def postgres(self) -> tuple[int, str] | None:
        """One parallel hash join's bound from the settings the log gives; None where it gives no work_mem, or where
        the bound is more than any machine has (a size then says nothing)."""
        if self.work_mem is None:
            return None
        bound = consumers.postgres_hash(self.work_mem, self.hash_mem_multiplier, self.pg_workers)
        return bound if bound[0] <= MAX_BYTES else None


NCCL_TWO, NCCL_EIGHT = consumers.nccl(2, "shm").bytes, consumers.nccl(8, "shm").bytes
LOADERS = ("dataloader", "unknown")  # whose need shmdoctor run's loader line is


def _need_bytes(d: Diagnosis, facts: Facts, measured: Measured | None, need: Requirement | None, job: Job):
    """What /dev/shm must hold: the loader's computed need; else what was in use at the peak plus the segment the
    text says could not be had; NCCL's whole need for the job's GPUs, never one segment (two H200s failed at 9.2 MiB
    short of 139 MiB), 8 GPUs with all-to-all where nothing tells their number; and more than a /dev/shm the text
    says it had (its size, or what was free)."""
    if need is not None:
        return need.bytes
    if d.consumer == "postgresql":  # one parallel query's segment, not the whole need: that from its settings only
        bound = job.postgres()
        return bound[0] if bound else None
    if job.need_bytes and d.consumer in LOADERS:  # shmdoctor run read the loaders and printed their need
        return job.need_bytes
    asked = d.bytes_needed or None
    base = measured.peak_bytes if measured else None
    seen = None if asked is None else (base or 0) + asked
    if d.consumer == "nccl":
        seen = max(seen or 0, job.nccl() or NCCL_ALL_TO_ALL_8)
    elif d.consumer in ("vllm", "sglang") and job.ranks and job.ranks >= 2:  # T=1: no ring
        ring = consumers.vllm if d.consumer == "vllm" else consumers.sglang
        seen = max(seen or 0, ring(job.ranks).bytes)
    had = d.shm_bytes or None
    if seen is not None and had is not None and seen <= had:
        seen = had + (asked or 0)  # it failed with that much: more is needed
    return seen


def _evidence(d: Diagnosis, measured: Measured | None, job: Job) -> str:
    """Where a need without the loader's settings comes from (_need_bytes' order), said after it in the fix."""
    bound = job.postgres() if d.consumer == "postgresql" else None
    if bound:
        return (
            f"one parallel hash join's bound in PostgreSQL: {bound[1]}, its settings read from the log "
            f"({job.pg_said}); each one running at once takes its own, the size in the error is one segment's"
        )
    if d.consumer == "nccl":
        if job.ranks is None:
            return "NCCL's measured model for 8 GPUs with all-to-all: nothing tells their number (--gpus N does)"
        return f"NCCL's measured model for {job.ranks} local GPUs, their number from {job.ranks_from}"
    if d.consumer in ("vllm", "sglang") and job.ranks and job.ranks >= 2:
        return f"{d.consumer}'s rings for {job.ranks} ranks from {job.ranks_from}, or the log's size if larger"
    if job.need_bytes and d.consumer in LOADERS:
        return job.need_from
    if measured is not None:
        return "the peak measured + the size the log says could not be had"
    return "read from the log"


# Where a log comes from a place explain cannot see, each way that place may size /dev/shm
WHERE_IT_RAN = (
    "docker/podman run --shm-size, compose shm_size, a pod's emptyDir (medium: Memory) at /dev/shm, ECS/Batch "
    "linuxParameters.sharedMemorySize, a Quadlet ShmSize: the one of where it ran"
)
# What each consumer's /dev/shm is made of, and the one thing to know for its size, where no text gave a number
LOADER_SIZE = (
    "size /dev/shm for the loader: (prefetch_factor × num_workers + 1) × one batch's bytes, one batch less with "
    "pin_memory, × local ranks, + 25%"
)
SIZED_BY = {
    "dataloader": f"{LOADER_SIZE}; give its settings (`explain --batch-size B --num-workers W --sample-bytes S`) for "
    "the size, or run the job under `shmdoctor run`",
    "ray": "size /dev/shm for Ray's object store: its object_store_memory + 10% (`ray status` says it; by default 30% "
    "of the memory), or start Ray with --object-store-memory below the /dev/shm there is",
    "postgresql": "size /dev/shm for PostgreSQL: the segment its error names is one of a parallel query's, not the "
    "server's need: one parallel hash join may take work_mem × hash_mem_multiplier × (workers + 1) × 1.5 for its "
    "segments (nodeHash.c, dsa.c), each one running at once its own; paste its settings with the error (its "
    "postgresql.conf's work_mem, hash_mem_multiplier, max_parallel_workers_per_gather lines) for that size, or run "
    "the server under `shmdoctor run -- postgres …` through the heavy queries for its peak",
    "chromium": "size /dev/shm for Chrome: each tab's renderer shares its frames through it; docker-selenium's README "
    "asks --shm-size=2g, Puppeteer's troubleshooting guide 1 GB; `shmdoctor run` around the browser measures a "
    "suite's own peak",
    "triton": "size /dev/shm for Triton's python backend: each model instance's pool (shm-default-byte-size, growing "
    "by shm-growth-byte-size) × instances; --backend-config=python,shm-default-byte-size=… sets it",
    "vllm": "size /dev/shm for vLLM's rings: (16 MiB + 1 + T) × 10 for the scheduler, (24 MiB + 2) × 10 a worker and "
    "(4 MiB + T) × 6 for the TP group, about 2 GiB at tensor parallel 8, plus NCCL's; `--gpus T` (its "
    "--tensor-parallel-size) gives the exact size",
    "sglang": "size /dev/shm for SGLang: its TP queue (4 MiB + T) × 6 and NCCL's SHM transport (139 MiB for two GPUs, "
    "SGLang turns cuMem off); `--gpus T` (its --tp-size) gives the exact size",
    # a semaphore is one 4 KiB page: where making one fails for space, /dev/shm was full of something else
    "multiprocessing": "a semaphore takes one 4 KiB page of /dev/shm: it was full of something else (a leak, another "
    "program): `df -h /dev/shm` and `ls -la /dev/shm` there show what, `shmdoctor clean` frees what no process holds",
    "celery": "a Celery (billiard) pool's semaphores take a 4 KiB page each: /dev/shm was full of something else, "
    "often billiard's own semaphores left by pools that were not closed (celery/billiard#293): `ls -la /dev/shm` "
    "there shows them, `shmdoctor clean` frees what no process holds",
    "oracle": "size /dev/shm for Oracle: above MEMORY_TARGET (Automatic Memory Management keeps the SGA and the PGA "
    "as files in /dev/shm; its JVM's JOXSHM cache there too): SHOW PARAMETER MEMORY_TARGET says it; or MEMORY_TARGET=0 "
    "with SGA_TARGET and PGA_AGGREGATE_TARGET (no /dev/shm)",
    "pandarallel": "size /dev/shm for pandarallel: it passes each worker's chunk of the frame and its result through "
    "files in /dev/shm (use_memory_fs): about twice the frame at once; or pandarallel.initialize(use_memory_fs=False) "
    "(pipes: slower)",
    "joblib": "size /dev/shm for joblib: its workers get each array above max_nbytes (1M by default) as a memmap in "
    "its temp folder, /dev/shm where it is writable (joblib's Parallel docs, temp_folder): the arrays passed at once; "
    "or Parallel(temp_folder='/tmp') / JOBLIB_TEMP_FOLDER=/tmp (disk: slower), or max_nbytes=None (no memmap)",
    "prometheus-client": "size /dev/shm for prometheus_client's multiprocess files: each process keeps one file a "
    "metric type, mapped and grown 1 MiB at a time (its mmap_dict), and a dead worker's stay: (workers + recycled "
    "ones) × types × 1 MiB or more; its docs: empty PROMETHEUS_MULTIPROC_DIR at each start and call "
    "multiprocess.mark_process_dead in gunicorn's child_exit",
    "tensorflow": "size /dev/shm for TensorFlow's input pipeline: workers that share batches (Keras "
    "use_multiprocessing, tf.data service) keep them there, and several GPUs add NCCL's; run the job under "
    "`shmdoctor run -- CMD` for its peak",
    "jax": "size /dev/shm for JAX: several GPUs of one host talk through XLA's NCCL, whose SHM transport takes 139 MiB "
    "for two GPUs, 813 MiB for eight (`--gpus N` gives the exact one); run the job under `shmdoctor run -- CMD` for "
    "its peak",
}


# A size a consumer's own documentation asks, where it gives one: offered where the need is not known (never the size
# that failed + 25%)
DOCS_SIZE = {"chromium": (2 * GiB, "the size docker-selenium's README asks for Chrome (--shm-size=2g)")}
DISK = "on disk in most containers: slower"
CHROME_NO_SHM = Fix(
    "Chrome's --disable-dev-shm-usage flag: its shared memory in /tmp instead of /dev/shm (Debian's /usr/bin/chromium "
    "adds it by itself where /dev/shm has less than 3.8 GB free: /etc/chromium.d/dev-shm)",
    caveat="/tmp is on disk in most containers: slower rendering (Puppeteer's troubleshooting guide offers it where "
    "/dev/shm cannot be sized: AWS Lambda, Cloud Run)",
)


def _docs_size(d: Diagnosis, facts: Facts) -> tuple[Fix, ...]:
    if d.consumer not in DOCS_SIZE:
        return ()
    size, said = DOCS_SIZE[d.consumer]
    return (Fix(f"give /dev/shm {format_size(size)}: {said}", shm_bytes=size),)


def _alternatives(d: Diagnosis) -> tuple[Fix, ...]:
    """A consumer's own way to take less /dev/shm, with its cost."""
    if d.consumer == "postgresql":
        return (
            Fix(
                "fewer segments: max_parallel_workers_per_gather = 0 (no parallel query, no segments), or a lower "
                "work_mem (smaller ones)",
                caveat="large queries run slower",
            ),
        )
    if d.consumer == "chromium":
        return (CHROME_NO_SHM,)
    if d.consumer == "joblib":
        return (Fix("joblib's memmaps on disk: JOBLIB_TEMP_FOLDER=/tmp (Parallel(temp_folder=...))", caveat=DISK),)
    if d.consumer == "prometheus-client":
        return (
            Fix(
                "remove a dead worker's files: prometheus_client.multiprocess.mark_process_dead(worker.pid) in "
                "gunicorn's child_exit hook, and an empty PROMETHEUS_MULTIPROC_DIR at each start (its docs)"
            ),
        )
    if d.consumer == "nccl":
        return (
            fixes.env_fix(fixes.NCCL_SHM_OFF, "NCCL_SHM_DISABLE", "1", caveat=fixes.NCCL_SHM_OFF_CAVEAT),
            fixes.env_fix(
                "NCCL 2.24+: cuMem host memory instead of /dev/shm",
                "NCCL_CUMEM_HOST_ENABLE",
                "1",
                caveat="needs NCCL_CUMEM_ENABLE on, a driver ≥ 12.6 and a host cuMemCreate that succeeds (Docker: "
                "--cap-add=SYS_NICE); SGLang and older vLLM turn cuMem off",
            ),
        )
    had = d.shm_bytes
    if d.consumer == "ray" and had:
        store = page_floor(int(had * 0.8))
        return (
            Fix(
                f"or an object store that fits the {format_size(had)} there was: ray start --object-store-memory="
                f"{store} (ray.init(object_store_memory={store}))",
                caveat="objects spill to disk sooner",
            ),
        )
    return ()


def _fixes(d: Diagnosis, place: Place, measured, need, job: Job) -> tuple[Fix, ...]:
    cause, facts = d.cause, place.facts
    if cause == "shm-space":
        wanted = _need_bytes(d, facts, measured, need, job)
        ranks = need.ranks if need else 1
        here = capacity.available(facts, ranks) if place.here and measured is None else None
        if wanted is None:  # no number in the text and no settings: the one thing to know first, never a guess
            ask = Fix(_loader_missing(d, job) or SIZED_BY.get(d.consumer, SIZED_BY["dataloader"]))
            host = Fix("use the host's /dev/shm", ipc="host", caveat=fixes.IPC_HOST_CAVEAT)
            out: tuple[Fix, ...] = (*_docs_size(d, facts), ask, host)
        elif here is not None and wanted <= here:
            # It fits where explain runs: the log comes from a place with less. A size for there, in every form.
            size = nice_size(int(wanted * capacity.MARGIN))
            why = f"{format_size(wanted)}" + ("" if need else f" needed ({_evidence(d, measured, job)})")
            where = f"give /dev/shm {format_size(size)} where it ran ({WHERE_IT_RAN}): {why} + 25%"
            host = Fix("use the host's /dev/shm where it ran", ipc="host", caveat=fixes.IPC_HOST_CAVEAT)
            return (Fix(where, shm_bytes=size), host, *_alternatives(d))
        else:
            # the /dev/shm it died in: run's, or what is known of a place elsewhere
            failed = measured.size_bytes if measured else None if place.here else facts.shm.size_bytes
            if failed and wanted <= failed:  # never a size at or below the one that failed; a need equal to it fit
                basis = f"more than the {format_size(failed)} it died in (the {format_size(wanted)} computed fit "
                basis += "there: something else took the rest)"
                out = fixes.grow_shm(failed, facts, ranks, basis)
            else:
                said = None if need else f"{format_size(wanted)} needed ({_evidence(d, measured, job)})"
                out = fixes.grow_shm(wanted, facts, ranks, said)
                if place.known == "unknown":  # said for Docker; where it ran may size /dev/shm another way
                    out = (replace(out[0], summary=f"{out[0].summary}; where it ran: {WHERE_IT_RAN}"), *out[1:])
        out += _alternatives(d)
        if need is not None:
            out += fixes.fit_today(need, facts)
        return out
    if cause == "shm-missing":
        if d.signature.endswith("-read-only"):
            return (fixes.read_write(facts),)
        if d.signature.endswith("-denied"):
            return (
                Fix(
                    "make /dev/shm writable for every user, as a tmpfs is by default "
                    "(a tmpfs mounted there: mode=1777)",
                    shell="chmod 1777 /dev/shm",
                ),
            )
        if d.signature.endswith("-enosys"):
            return (
                Fix(
                    "there is no /dev/shm: mount a tmpfs there (mode=1777); where none can be (AWS Lambda), no "
                    "Pool, Queue or Lock: multiprocessing.Process with a Pipe needs none"
                ),
            )
        if d.signature.endswith("-unshared"):  # a segment made in another /dev/shm than the one it is looked for in
            return (
                Fix(
                    "give both sides one /dev/shm: --ipc=host on both containers, or one volume at /dev/shm in both "
                    "(in a pod: one emptyDir of medium Memory mounted in both containers)",
                    ipc="host",
                    caveat=fixes.IPC_HOST_CAVEAT,
                ),
            )
        if d.consumer == "chromium":
            return (*_docs_size(d, facts), CHROME_NO_SHM)
        wanted = need.bytes if need else ENGINE_DEFAULT_SHM
        return fixes.grow_shm(wanted, facts)[:1] + (Fix("load in the training process", loader={"num_workers": 0}),)
    if cause == "fd-limit":
        return (
            Fix("raise the descriptor limit (soft and hard)", nofile=65536),
            Fix("in the training script: torch.multiprocessing.set_sharing_strategy('file_system')"),
        )
    if cause == "memory-limit" and job.memory_limit:  # the kernel's report read: the limit hit, /dev/shm's share
        shm = job.shmem or 0
        size = nice_size(int(max(job.memory_limit, shm + capacity.PROCESS_RESERVE) * capacity.MARGIN))
        basis = f"more than the {format_size(job.memory_limit)} limit that was hit (read from the kernel's report)"
        if shm:
            basis += f", which held {format_size(shm)} of /dev/shm"
        out = (Fix(f"memory limit of {format_size(size)}: {basis} + 25%", memory_bytes=size),)
        if shm >= job.memory_limit // 2:  # /dev/shm took most of it: a bounded /dev/shm fails with an error instead
            out += (
                Fix(
                    f"size /dev/shm below the memory limit: it held {format_size(shm)} of the "
                    f"{format_size(job.memory_limit)} limit, and a full one fails with an error, not an OOM kill"
                ),
            )
        return out
    if cause == "memory-limit":
        held = facts.shm.size_bytes if facts.shm.size_bytes is not None else (measured.peak_bytes if measured else 0)
        shm_bytes = need.bytes if need else held
        out = (fixes.grow_memory(shm_bytes, facts),) if need or shm_bytes else ()
        if facts.memory.limit_bytes and facts.shm.size_bytes and facts.shm.size_bytes > facts.memory.limit_bytes:
            out += (
                Fix(
                    f"size /dev/shm below the memory limit ({format_size(facts.memory.limit_bytes)}): a full "
                    "/dev/shm then fails with an error instead of a silent OOM kill"
                ),
            )
        return out
    if cause == "remove-ipc":
        return (
            Fix(
                "stop systemd-logind deleting the user's segments at logout: RemoveIPC=no in /etc/systemd/logind.conf",
                shell="sed -i 's/^#\\?RemoveIPC=.*/RemoveIPC=no/' /etc/systemd/logind.conf && "
                "systemctl restart systemd-logind",
            ),
            Fix("keep the user logged in for the job's life", shell="loginctl enable-linger $USER"),
        )
    if cause == "ambiguous":
        return (fixes.env_fix("rerun with NCCL's own account of the failing call", "NCCL_DEBUG", "INFO"),)
    if cause == "shm-leak":
        return (Fix("see what no process holds with `shmdoctor clean`, free it with `shmdoctor clean --yes`"),)
    if d.signature == "torch-mmap-enomem":  # not-shm (every other cause returned above): the text says mmap's ENOMEM
        return (
            Fix(
                "raise the kernel's limit on mappings, on the host (no container sets it)",
                shell="sysctl -w vm.max_map_count=262144",
            ),
            Fix("keep fewer shared tensors alive: fewer workers or prefetch_factor, fewer tensors a batch"),
        )
    return ()


def _loader_missing(d: Diagnosis, job: Job) -> str:
    """Where the log gives a loader's batch or workers, the ask: what it gives, and the command with the one thing
    missing (one sample's bytes, never guessed: no log says it); else empty."""
    if d.consumer not in LOADERS or not job.loader:
        return ""
    given = {option: value for option, value, _ in job.loader}
    said = ", ".join(f"{option} {value} ({where})" for option, value, where in job.loader)
    args = " ".join(f"{o} {given.get(o, p)}" for o, p in (("--batch-size", "B"), ("--num-workers", "W")))
    return (
        f"{LOADER_SIZE}; the log gives {said}: what is missing is one sample's bytes (S), "
        f"`shmdoctor explain {args} --sample-bytes S LOG` for the size (`--dataset MODULE:ATTR` in its place measures "
        "it, torch needed), or run the job under `shmdoctor run`"
    )


def _nccl_words(job: Job) -> str:
    if job.ranks is not None:
        return f"; NCCL's whole /dev/shm for {job.ranks} local GPUs ({job.ranks_from}) is {format_size(job.nccl())}"
    return (
        f"; NCCL's whole /dev/shm is {format_size(NCCL_TWO)} for 2 local GPUs, {format_size(NCCL_EIGHT)} for 8 "
        f"({format_size(NCCL_ALL_TO_ALL_8)} with all-to-all, the size asked here): `--gpus N` gives the exact one"
    )


def _message(d: Diagnosis, place: Place, measured, need, job: Job) -> str:
    cause, meaning, facts = d.cause, BY_ID[d.signature].meaning, place.facts
    where = f"line {d.line}" if d.line else d.excerpt
    if d.found_by == "reader":  # no known text: what of its block it stands on
        where += f", read with {d.evidence}"
    text = f"{meaning} ({where})"
    if d.reason:
        text += f"; {d.reason}"
    if cause == "ambiguous":
        return f"ambiguous: {meaning} ({where}); {d.reason}"
    if cause == "not-shm":
        if not d.reason:  # the text itself says what it is
            return f"not shared memory: {meaning} ({where})"
        return f"not shared memory: {d.reason} ({where}: {meaning})"
    wanted = _need_bytes(d, facts, measured, need, job) if cause == "shm-space" else None
    if cause == "shm-space" and need is None and d.consumer == "nccl":
        text += _nccl_words(job)
    if wanted is not None and d.consumer == "postgresql" and need is None:  # a bound of its settings, not a need seen
        text += f"; one parallel hash join may take up to {format_size(wanted)} at the settings in the log"
    elif wanted is not None:
        text += f"; needs ≥ {format_size(wanted)}"
        here = capacity.available(facts, need.ranks if need else 1) if place.here else None
        if here is not None and wanted <= here and measured is None:
            text += (
                f", which fits the {format_size(here)} free here: the log comes from a place with less "
                "(run explain there, or with --container)"
            )
    return text


def judge(
    diagnoses: tuple[Diagnosis, ...],
    where: Facts | Place,
    *,
    ended: Exit | None = None,
    measured: Measured | None = None,
    need: Requirement | None = None,
    notes: tuple[str, ...] = (),
    source: str = "",
    clues: Clues | None = None,
    gpus: int | None = None,
) -> Explanation:
    """The diagnoses weighed in the place they ran in: Facts are of here (run, --container, --here), a Place may be
    elsewhere (what is stated or the text says of it, or unknown)."""
    place = where if isinstance(where, Place) else here(where)
    facts = place.facts
    found = list(diagnoses)
    job = Job.of(facts, clues, gpus)
    status = from_exit(ended) if ended else None
    if status is not None and not {d.signature for d in found} & set(BY_ID[status.signature].superseded_by):
        found.append(status)  # unless the log already says it (the shell's "Bus error" for a 135)
    weighed = _one_way(
        found,
        # a text its block already put off /dev/shm (not-shm) is not weighed again
        tuple(
            _weigh(d, place, ended, measured, need, job) if BY_ID[d.signature].ambiguous and d.cause != "not-shm" else d
            for d in found
        ),
    )
    # A finding a diagnosis, in the order of the log (the scanner keeps one a signature and cause: its first line)
    findings = [
        Finding(
            id=d.signature,
            severity="error" if d.cause in SHM_CAUSES else "warning" if d.cause == "ambiguous" else "info",
            message=_message(d, place, measured, need, job),
            fixes=_fixes(d, place, measured, need, job),
        )
        for d in weighed
    ]
    findings.sort(key=lambda f: -SEVERITY_RANK[f.severity])
    report = Report(facts=facts, requirement=need, findings=tuple(findings), notes=notes)
    return Explanation(report, weighed, ended, measured, source, place)
