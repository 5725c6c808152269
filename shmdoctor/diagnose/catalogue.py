"""The catalogue of failure texts: each signature has a stable ID, the exact text it matches (a literal anchor every
matching line contains, then a regular expression), the cause it points to, who prints it, and where the text comes
from. Data and small matchers only: no I/O here.

Causes: shm-space (/dev/shm too small or full), shm-missing (no usable /dev/shm), fd-limit (descriptors of shared
segments), memory-limit (tmpfs pages charged to the memory cgroup: an OOM kill), shm-leak (segments left behind),
remove-ipc (systemd-logind deleting a user's segments), not-shm (the facts or the text say it is something else).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

Cause = Literal["shm-space", "shm-missing", "fd-limit", "memory-limit", "shm-leak", "remove-ipc", "not-shm"]
Consumer = Literal["dataloader", "nccl", "vllm", "sglang", "ray", "triton", "unknown"]
CAUSES: tuple[Cause, ...] = (
    "shm-space",
    "shm-missing",
    "fd-limit",
    "memory-limit",
    "shm-leak",
    "remove-ipc",
    "not-shm",
)
CONSUMERS: tuple[Consumer, ...] = ("dataloader", "nccl", "vllm", "sglang", "ray", "triton", "unknown")
MiB, GB = 2**20, 10**9

Needed = Callable[["re.Match[str]"], "int | None"]

# Every pattern is linear on any line. How a new one stays so: every repetition is bounded (`{0,GAP}`, `{1,NAME}`,
# never `*` or `+`), none is nested in another, and a repetition is followed by something it cannot match itself
# (`\S{1,NAME} to`: the space ends it; not `\S*nccl\S*`, which tries every split). A condition over the same
# characters goes in a lookahead, which is never re-entered (`(?=\S{0,NAME}nccl)\S{1,NAME}`). Each place a match
# may start then costs at most the sum of the bounds, and a line (at most scan.MAX_LINE) that times its length.
# tests/unit/diagnose/test_catalogue_linear.py checks both: no unbounded repetition, and no super-linear growth.
NAME = 255  # a file name, a key, a path's part (NAME_MAX)
GAP = 1000  # free text between two parts of one message
NUM = 40  # digits of a number, each side of its point
NUMBER = rf"[0-9]{{1,{NUM}}}(?:\.[0-9]{{1,{NUM}}})?"  # ASCII digits only ('²' and '１' are not numbers here)
PLAUSIBLE = 2**50  # 1 PiB: no /dev/shm segment or store is bigger; a log that says more is not read as a size


@dataclass(frozen=True)
class Signature:
    id: str
    cause: Cause
    consumer: Consumer
    anchor: str  # a literal every matching line contains: the streaming scan looks for it first (bytes.find)
    pattern: re.Pattern[str]
    source: str  # where the text comes from: the program's source, an issue thread
    meaning: str  # what it says, in words, for the report
    needed: Needed | None = None  # the bytes the text says were needed, from its numbers
    # The text alone does not prove /dev/shm (a bus error, a SIGKILL): the facts where it ran decide.
    ambiguous: bool = False
    # A previous line that makes it something else (NCCL's cudaHostRegister failure before "Error while creating").
    not_after: re.Pattern[str] | None = None
    # A more specific signature in the same log says the same thing better: this one is then left out.
    superseded_by: tuple[str, ...] = ()


class Implausible(ValueError):
    """A number a log gives that no machine has: said in the diagnosis, never turned into a fix."""


def number(text: str, unit: int = 1) -> int | None:
    """The one way a number is read from a log: `text` × `unit`, in bytes. Malformed (not NUMBER) → None; above
    PLAUSIBLE → Implausible. Bounded: at most NUM digits each side, so no int() of thousands of digits."""
    if re.fullmatch(NUMBER, text) is None:
        return None
    value = int(float(text) * unit)
    if value > PLAUSIBLE:
        raise Implausible(f"the log says {text} × {unit} bytes, more than 1 PiB: not a size to give /dev/shm")
    return value


def _bytes(group: str, unit: int = 1) -> Needed:
    return lambda m: number(m.group(group), unit)


def _ray_shm_size(m: re.Match[str]) -> int | None:
    # Ray prints '--shm-size=X.XXgb' with X = object store bytes * 1.1 / 2**30 (ray-project/ray#40736)
    return number(m.group("gb"), 2**30) if m.group("gb") else None


_TORCH_FILE = rf"</?(?:dev/shm/)?torch_\w{{1,{NAME}}}>"
_NCCL_DENIED = re.compile(r"Cuda failure 'invalid argument'")
_PIDS = rf"DataLoader worker \(pids?\(?s?\)? [0-9, ]{{1,{GAP}}}\) is killed by signal"
_EXIT = rf"(?:exited with code|[Ee]xit [Cc]ode:?|exit status|returned non-zero exit status) {{1,{NUM}}}"
_SHELL = rf"line [0-9]{{1,{NUM}}}: {{1,{NUM}}}[0-9]{{1,{NUM}}} |^\[[0-9]{{1,{NUM}}}\][+-]? {{1,{NUM}}}"

SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "torch-shm-enospc",
        "shm-space",
        "dataloader",
        "No space left on device",
        re.compile(
            r"unable to (?:allocate shared memory\(shm\)|write to file|resize file|"
            rf"mmap [0-9]{{1,{NUM}}} bytes from file)"
            rf"(?: for file)? {_TORCH_FILE}.{{0,{GAP}}}No space left on device \(28\)"
        ),
        "PyTorch MapAllocator (posix_fallocate since 2.10; 'unable to write to file' before): idiap/ESLAM#20",
        "a DataLoader worker could not allocate a batch in /dev/shm: it is full",
    ),
    Signature(
        "torch-shm-errno11",
        "shm-space",
        "dataloader",
        "Resource temporarily unavailable (11)",
        re.compile(
            rf"unable to allocate shared memory\(shm\) for file {_TORCH_FILE}: Resource temporarily unavailable"
        ),
        "PyTorch MapAllocator, errno misreported as 11 (pytorch#176069; the seed article's message)",
        "a DataLoader worker could not allocate a batch in /dev/shm (the errno says 11; it means out of space)",
    ),
    Signature(
        "torch-worker-bus-error",
        "shm-space",
        "dataloader",
        "Unexpected bus error encountered in worker",
        re.compile(r"ERROR: Unexpected bus error encountered in worker\. This might be caused by insufficient shared"),
        "PyTorch's worker SIGBUS handler: tengshaofeng/ResidualAttentionNetwork-pytorch#2, "
        "open-mmlab/mmsegmentation#1356",
        "a DataLoader worker died of a bus error touching a page it could not get",
        ambiguous=True,
    ),
    Signature(
        "torch-worker-killed-bus-error",
        "shm-space",
        "dataloader",
        "is killed by signal: Bus error",
        re.compile(rf"{_PIDS}: Bus error"),
        "PyTorch's main process on a worker's SIGBUS: pytorch#5040, XPixelGroup/BasicSR#59",
        "a DataLoader worker was killed by a bus error",
        ambiguous=True,
        superseded_by=("torch-worker-bus-error",),
    ),
    Signature(
        "torch-worker-killed",
        "memory-limit",
        "dataloader",
        "is killed by signal: Killed",
        re.compile(rf"{_PIDS}: Killed"),
        "PyTorch's main process on a worker's SIGKILL (the OOM killer): pytorch#1355 and many threads",
        "a DataLoader worker was killed (SIGKILL): the OOM killer, whose count includes /dev/shm pages",
        ambiguous=True,
    ),
    Signature(
        "torch-shm-missing",
        "shm-missing",
        "dataloader",
        "No such file or directory",
        re.compile(
            r"(?:FileNotFoundError: \[Errno 2\] No such file or directory"
            rf"(?:: '/dev/shm[^']{{0,{NAME}}}')?\s{{0,{GAP}}}$"
            rf"|unable to open shared memory object {_TORCH_FILE} in read-write mode: No such file or directory)"
        ),
        "Python's SemLock / PyTorch's shm_open without a /dev/shm (--ipc=none), seen here; FACTS.md",
        "there was no /dev/shm to create a segment or a semaphore in",
        ambiguous=True,
    ),
    Signature(
        "torch-ancdata",
        "fd-limit",
        "dataloader",
        "items of ancdata",
        re.compile(r"received 0 items of ancdata"),
        "Python's multiprocessing.reduction.recvfds under the file_descriptor strategy: pytorch#973, pytorch#41465",
        "the training process ran out of file descriptors receiving shared batches (one per tensor)",
    ),
    Signature(
        "torch-shm-emfile",
        "fd-limit",
        "dataloader",
        "Too many open files",
        re.compile(
            rf"(?:unable to open shared memory object {_TORCH_FILE}.{{0,{GAP}}}Too many open files"
            r"|OSError: \[Errno 24\] Too many open files|Too many open files\. Communication with the workers)"
        ),
        "PyTorch shm_open / DataLoader's fd diagnosis (pytorch#34768), pytorch#11201",
        "the process ran out of file descriptors (each shared tensor holds one under the file_descriptor strategy)",
        superseded_by=("torch-ancdata",),
    ),
    Signature(
        "torch-shm-unlink",
        "remove-ipc",
        "dataloader",
        "could not unlink the shared memory file",
        re.compile(rf"could not unlink the shared memory file /torch_\w{{1,{NAME}}}"),
        "PyTorch THRefcountedMapAllocator: mlcommons/storage#528 (systemd-logind RemoveIPC=yes), pytorch#30225",
        "a segment of the file_system strategy was deleted under the job: systemd-logind's RemoveIPC at logout",
    ),
    Signature(
        "python-shm-leaked",
        "shm-leak",
        "unknown",
        "leaked shared_memory objects",
        re.compile(rf"resource_tracker: There appear to be [0-9]{{1,{NUM}}} leaked shared_memory objects"),
        "CPython multiprocessing.resource_tracker at shutdown",
        "segments of multiprocessing.shared_memory were left in /dev/shm by processes that did not unlink them",
    ),
    Signature(
        "nccl-shm-extend",
        "shm-space",
        "nccl",
        "failed to extend",
        re.compile(rf"failed to extend (?=\S{{0,{NAME}}}nccl)(?P<file>\S{{1,{NAME}}}) to (?P<bytes>{NUMBER}) bytes"),
        "NCCL src/misc/shmutils.cc (FACTS.md)",
        "NCCL could not size its shared-memory transport segment",
        needed=_bytes("bytes"),
    ),
    Signature(
        "nccl-shm-create",
        "shm-space",
        "nccl",
        "Error while creating shared memory segment",
        re.compile(
            rf"Error while creating shared memory segment (?P<file>\S{{1,{NAME}}}) \(size (?P<bytes>{NUMBER})\)"
        ),
        "NCCL shm.h / shmutils.cc: NVIDIA/nccl#342, ai-dynamo/dynamo#1408, genmoai/mochi#36",
        "NCCL could not create a shared-memory transport segment",
        needed=_bytes("bytes"),
        not_after=_NCCL_DENIED,  # cudaHostRegister failed, not space (nccl#1518)
        superseded_by=("nccl-shm-extend",),
    ),
    Signature(
        "nccl-fallocate",
        "shm-space",
        "nccl",
        "Call to posix_fallocate failed",
        re.compile(r"NCCL WARN Call to posix_fallocate failed ?: No space left on device"),
        "NCCL include/shm.h (NCCL 2.7): NVIDIA/nccl#290, NVIDIA/nccl#342",
        "NCCL could not allocate its shared-memory transport segment",
        superseded_by=("nccl-shm-create", "nccl-shm-extend"),
    ),
    Signature(
        "nccl-shm-open-denied",
        "shm-missing",
        "nccl",
        "Call to shm_open failed",
        re.compile(r"NCCL WARN Call to shm_open failed ?: Permission denied"),
        "NCCL include/shm.h: NVIDIA/nccl#328 (fixed with chmod 1777 /dev/shm)",
        "NCCL could not create a segment in /dev/shm: it is not writable for this user",
    ),
    Signature(
        "nccl-system-error",
        "shm-space",
        "nccl",
        "unhandled system error",
        re.compile(
            rf"(?:NCCL error|NCCL failure|ncclSystemError).{{0,{GAP}}}unhandled system error"
            rf"|unhandled system error.{{0,{GAP}}}NCCL"
        ),
        "NCCL via PyTorch ProcessGroupNCCL: NVIDIA/nccl#473, vllm-project/vllm#10626, pytorch/ci-infra#490",
        "NCCL failed a system call; with a small /dev/shm that is its shared-memory transport (NCCL_DEBUG=INFO says)",
        ambiguous=True,
        superseded_by=("nccl-shm-extend", "nccl-shm-create", "nccl-fallocate", "nccl-shm-open-denied"),
    ),
    Signature(
        "vllm-shm-insufficient",
        "shm-space",
        "vllm",
        "Insufficient space in /dev/shm",
        re.compile(
            rf"Insufficient space in /dev/shm for (?P<name>\S{{1,{NAME}}}): (?P<mib>{NUMBER}) MiB required, "
            rf"(?P<free>{NUMBER}) MiB free"
        ),
        "vLLM 0.33 distributed/device_communicators/shm_broadcast.py (FACTS.md)",
        "vLLM could not create a shared-memory ring buffer",
        needed=_bytes("mib", MiB),
    ),
    Signature(
        "sglang-shm-fallback",
        "shm-space",
        "sglang",
        "Consider increasing /dev/shm size",
        re.compile(rf"(?i:fall(?:ing)? ?back).{{0,{GAP}}}Consider increasing /dev/shm size"),
        "SGLang 0.5.23 multimodal tensor transport (FACTS.md)",
        "SGLang fell back from /dev/shm for multimodal tensors (slower): posix_fallocate failed",
    ),
    Signature(
        "ray-object-store-tmp",
        "shm-space",
        "ray",
        "instead of /dev/shm because /dev/shm has only",
        re.compile(
            rf"object store is using (?P<dir>\S{{1,{NAME}}}) instead of /dev/shm because /dev/shm has only "
            rf"(?P<avail>{NUMBER}) bytes(?:.{{0,{GAP}}}?--shm-size=(?P<gb>{NUMBER})gb)?"
        ),
        "Ray _private/services.py: ray-project/ray#11951, ray-project/ray#14616, InftyAI/llmaz#238; seen here",
        "Ray put its object store on disk instead of /dev/shm (it works, slowly)",
        needed=_ray_shm_size,
    ),
    Signature(
        "ray-object-store-too-big",
        "shm-space",
        "ray",
        "exceeds /dev/shm size",
        re.compile(
            rf"The configured object store size \((?P<gb>{NUMBER}) GB\) exceeds /dev/shm size \((?P<shm>{NUMBER}) GB\)"
        ),
        "Ray _private/services.py: ray-project/ray#16308",
        "Ray refused to start: its object store does not fit in /dev/shm",
        needed=_bytes("gb", GB),
    ),
    Signature(
        "triton-shm-pool",
        "shm-space",
        "triton",
        "If you are running Triton inside docker",
        re.compile(
            r"(?:Failed to increase the shared memory pool size for|Unable to initialize shared memory) key "
            rf"'(?P<key>[^']{{1,{NAME}}})' to (?:requested size \()?(?P<bytes>{NUMBER}) bytes.{{0,{GAP}}}"
            r"Error: No space left on device"
        ),
        "Triton python backend: triton-inference-server/server#5681, #6156, #6195",
        "a Triton python-backend instance could not grow its shared-memory region",
    ),
    Signature(
        "shell-bus-error",
        "shm-space",
        "unknown",
        "Bus error",
        re.compile(rf"^\s{{0,{GAP}}}Bus error(?: \(core dumped\))?\s{{0,{GAP}}}$|(?:{_SHELL})Bus error\b"),
        "the shell's report of a process killed by SIGBUS (exit 135)",
        "a process died of a bus error: a page of a mapped file could not be had (a full tmpfs, a truncated file)",
        ambiguous=True,
        superseded_by=("torch-worker-bus-error", "torch-worker-killed-bus-error"),
    ),
    Signature(
        "shell-killed",
        "memory-limit",
        "unknown",
        "Killed",
        re.compile(rf"^\s{{0,{GAP}}}Killed\s{{0,{GAP}}}$|(?:{_SHELL})Killed\b"),
        "the shell's report of a process killed by SIGKILL (exit 137)",
        "a process was killed (SIGKILL): the OOM killer, whose count includes /dev/shm pages, or a kill from outside",
        ambiguous=True,
        superseded_by=("torch-worker-killed",),
    ),
)

# What a log says of an exit, and what the engine or `run` saw of it (no text: `pattern` never matches a line).
_NEVER = re.compile(r"(?!)")
STATUSES: tuple[Signature, ...] = (
    Signature(
        "exit-code-137",
        "memory-limit",
        "unknown",
        "137",
        re.compile(rf"{_EXIT}137\b"),
        "docker compose / kubectl describe / subprocess reports of an exit by SIGKILL",
        "a process exited with 137 (SIGKILL): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "exit-code-135",
        "shm-space",
        "unknown",
        "135",
        re.compile(rf"{_EXIT}135\b"),
        "docker compose / kubectl describe / subprocess reports of an exit by SIGBUS",
        "a process exited with 135 (SIGBUS): a page of a mapped file could not be had",
        ambiguous=True,
    ),
    Signature(
        "k8s-oomkilled",
        "memory-limit",
        "unknown",
        "OOMKilled",
        re.compile(rf"(?:Reason|reason)\W{{1,{NUM}}}OOMKilled\b"),
        "kubectl describe pod / the pod status: the container's memory limit was hit",
        "the container was OOM-killed: /dev/shm (an emptyDir of medium Memory) counts against its memory limit",
    ),
    Signature(
        "container-oom-killed",
        "memory-limit",
        "unknown",
        "",
        _NEVER,
        "the engine: State.OOMKilled",
        "the container was OOM-killed (State.OOMKilled): /dev/shm pages count against its memory limit",
    ),
    Signature(
        "exit-sigkill",
        "memory-limit",
        "unknown",
        "",
        _NEVER,
        "the exit status: killed by SIGKILL (137)",
        "killed by SIGKILL (exit 137): the OOM killer, whose count includes /dev/shm pages, or a kill from outside",
        ambiguous=True,
        superseded_by=("shell-killed", "exit-code-137", "k8s-oomkilled"),
    ),
    Signature(
        "exit-sigbus",
        "shm-space",
        "unknown",
        "",
        _NEVER,
        "the exit status: killed by SIGBUS (135)",
        "died of a bus error (SIGBUS, exit 135): a page of a mapped file could not be had",
        ambiguous=True,
        superseded_by=("shell-bus-error", "exit-code-135"),
    ),
)
SIGNATURES = SIGNATURES + STATUSES
BY_ID = {s.id: s for s in SIGNATURES}
SHM_CAUSES = frozenset(CAUSES) - {"not-shm"}
