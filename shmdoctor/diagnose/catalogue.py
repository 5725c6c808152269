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


def _int(group: int | str) -> Needed:
    return lambda m: int(m.group(group))


def _mib(group: str) -> Needed:
    return lambda m: int(float(m.group(group)) * MiB)


def _gb(group: str) -> Needed:
    return lambda m: int(float(m.group(group)) * GB)


def _ray_shm_size(m: re.Match[str]) -> int | None:
    # Ray prints '--shm-size=X.XXgb' with X = object store bytes * 1.1 / 2**30 (ray-project/ray#40736)
    return int(float(m.group("gb")) * 2**30) if m.group("gb") else None


_TORCH_FILE = r"</?(?:dev/shm/)?torch_[\w]+>"
_NCCL_DENIED = re.compile(r"Cuda failure 'invalid argument'")

SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "torch-shm-enospc",
        "shm-space",
        "dataloader",
        "No space left on device",
        re.compile(
            r"unable to (?:allocate shared memory\(shm\)|write to file|resize file|mmap \d+ bytes from file)"
            rf"(?: for file)? {_TORCH_FILE}.*No space left on device \(28\)"
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
        re.compile(r"DataLoader worker \(pids?\(?s?\)? [\d, ]+\) is killed by signal: Bus error"),
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
        re.compile(r"DataLoader worker \(pids?\(?s?\)? [\d, ]+\) is killed by signal: Killed"),
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
            r"(?:FileNotFoundError: \[Errno 2\] No such file or directory(?:: '/dev/shm[^']*')?\s*$"
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
            rf"(?:unable to open shared memory object {_TORCH_FILE}.*Too many open files"
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
        re.compile(r"could not unlink the shared memory file /torch_\w+"),
        "PyTorch THRefcountedMapAllocator: mlcommons/storage#528 (systemd-logind RemoveIPC=yes), pytorch#30225",
        "a segment of the file_system strategy was deleted under the job: systemd-logind's RemoveIPC at logout",
    ),
    Signature(
        "python-shm-leaked",
        "shm-leak",
        "unknown",
        "leaked shared_memory objects",
        re.compile(r"resource_tracker: There appear to be \d+ leaked shared_memory objects"),
        "CPython multiprocessing.resource_tracker at shutdown",
        "segments of multiprocessing.shared_memory were left in /dev/shm by processes that did not unlink them",
    ),
    Signature(
        "nccl-shm-extend",
        "shm-space",
        "nccl",
        "failed to extend",
        re.compile(r"failed to extend (?P<file>\S*nccl\S*) to (?P<bytes>\d+) bytes"),
        "NCCL src/misc/shmutils.cc (FACTS.md)",
        "NCCL could not size its shared-memory transport segment",
        needed=_int("bytes"),
    ),
    Signature(
        "nccl-shm-create",
        "shm-space",
        "nccl",
        "Error while creating shared memory segment",
        re.compile(r"Error while creating shared memory segment (?P<file>\S+) \(size (?P<bytes>\d+)\)"),
        "NCCL shm.h / shmutils.cc: NVIDIA/nccl#342, ai-dynamo/dynamo#1408, genmoai/mochi#36",
        "NCCL could not create a shared-memory transport segment",
        needed=_int("bytes"),
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
        re.compile(r"(?:NCCL error|NCCL failure|ncclSystemError).*unhandled system error|unhandled system error.*NCCL"),
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
            r"Insufficient space in /dev/shm for (?P<name>\S+): (?P<mib>[\d.]+) MiB required, (?P<free>[\d.]+) MiB free"
        ),
        "vLLM 0.33 distributed/device_communicators/shm_broadcast.py (FACTS.md)",
        "vLLM could not create a shared-memory ring buffer",
        needed=_mib("mib"),
    ),
    Signature(
        "sglang-shm-fallback",
        "shm-space",
        "sglang",
        "Consider increasing /dev/shm size",
        re.compile(r"(?i:fall(?:ing)? ?back).{0,200}Consider increasing /dev/shm size"),
        "SGLang 0.5.23 multimodal tensor transport (FACTS.md)",
        "SGLang fell back from /dev/shm for multimodal tensors (slower): posix_fallocate failed",
    ),
    Signature(
        "ray-object-store-tmp",
        "shm-space",
        "ray",
        "instead of /dev/shm because /dev/shm has only",
        re.compile(
            r"object store is using (?P<dir>\S+) instead of /dev/shm because /dev/shm has only (?P<avail>\d+) bytes"
            r"(?:.*?--shm-size=(?P<gb>[\d.]+)gb)?"
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
            r"The configured object store size \((?P<gb>[\d.]+) GB\) exceeds /dev/shm size \((?P<shm>[\d.]+) GB\)"
        ),
        "Ray _private/services.py: ray-project/ray#16308",
        "Ray refused to start: its object store does not fit in /dev/shm",
        needed=_gb("gb"),
    ),
    Signature(
        "triton-shm-pool",
        "shm-space",
        "triton",
        "If you are running Triton inside docker",
        re.compile(
            r"(?:Failed to increase the shared memory pool size for|Unable to initialize shared memory) key "
            r"'(?P<key>[^']+)' to (?:requested size \()?(?P<bytes>\d+) bytes.*Error: No space left on device"
        ),
        "Triton python backend: triton-inference-server/server#5681, #6156, #6195",
        "a Triton python-backend instance could not grow its shared-memory region",
    ),
    Signature(
        "shell-bus-error",
        "shm-space",
        "unknown",
        "Bus error",
        re.compile(r"^\s*Bus error(?: \(core dumped\))?\s*$|line \d+: +\d+ Bus error\b|^\[\d+\][+-]? +Bus error\b"),
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
        re.compile(r"^\s*Killed\s*$|line \d+: +\d+ Killed\b|^\[\d+\][+-]? +Killed\b"),
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
        re.compile(r"(?:exited with code|[Ee]xit [Cc]ode:?|exit status|returned non-zero exit status) +137\b"),
        "docker compose / kubectl describe / subprocess reports of an exit by SIGKILL",
        "a process exited with 137 (SIGKILL): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "exit-code-135",
        "shm-space",
        "unknown",
        "135",
        re.compile(r"(?:exited with code|[Ee]xit [Cc]ode:?|exit status|returned non-zero exit status) +135\b"),
        "docker compose / kubectl describe / subprocess reports of an exit by SIGBUS",
        "a process exited with 135 (SIGBUS): a page of a mapped file could not be had",
        ambiguous=True,
    ),
    Signature(
        "k8s-oomkilled",
        "memory-limit",
        "unknown",
        "OOMKilled",
        re.compile(r"(?:Reason|reason)\W+OOMKilled\b"),
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
