"""The catalogue of failure texts: each signature has a stable ID, the exact text it matches (a literal anchor every
matching line contains, then a regular expression), the cause it points to, who prints it, and where the text comes
from. Data and small matchers only: no I/O here.

Causes: shm-space (/dev/shm too small or full), shm-missing (no usable /dev/shm), fd-limit (descriptors of shared
segments), memory-limit (tmpfs pages charged to the memory cgroup: an OOM kill), shm-leak (segments left behind),
remove-ipc (systemd-logind deleting a user's segments), not-shm (the facts or the text say it is something else),
ambiguous (the text fits /dev/shm and other causes alike, and nothing known of the place decides: said how to tell).
An shm-missing signature whose id ends in -denied or -read-only says why /dev/shm could not be used: its fix follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Literal

from .clues import EMPTYDIR_EVICTED

Cause = Literal[
    "shm-space", "shm-missing", "fd-limit", "memory-limit", "shm-leak", "remove-ipc", "not-shm", "ambiguous"
]
Consumer = Literal[
    "dataloader",
    "nccl",
    "vllm",
    "sglang",
    "ray",
    "triton",
    "postgresql",
    "chromium",
    "celery",
    "joblib",
    "multiprocessing",
    "prometheus-client",
    "tensorflow",
    "jax",
    "oracle",
    "pandarallel",
    "unknown",
]
CAUSES: tuple[Cause, ...] = (
    "shm-space",
    "shm-missing",
    "fd-limit",
    "memory-limit",
    "shm-leak",
    "remove-ipc",
    "not-shm",
    "ambiguous",
)
CONSUMERS: tuple[Consumer, ...] = (
    "dataloader",
    "nccl",
    "vllm",
    "sglang",
    "ray",
    "triton",
    "postgresql",
    "chromium",
    "celery",
    "joblib",
    "multiprocessing",
    "prometheus-client",
    "tensorflow",
    "jax",
    "oracle",
    "pandarallel",
    "unknown",
)
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
    had: Needed | None = None  # the /dev/shm the text says there was (its size or what was free), from its numbers
    # The text alone does not prove /dev/shm (a bus error, a SIGKILL): the facts where it ran decide.
    ambiguous: bool = False
    # A previous line that makes it something else (NCCL's cudaHostRegister failure before "Error while creating").
    not_after: re.Pattern[str] | None = None
    # A line just before that the text needs to mean this (the SemLock frame above a bare OSError); a plain literal.
    only_after: re.Pattern[str] | None = None
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
        said = f"{text} bytes" if unit == 1 else f"{text} × {unit} bytes"
        raise Implausible(f"the log says {said}, more than 1 PiB: not a size to give /dev/shm")
    return value


def _bytes(group: str, unit: int = 1) -> Needed:
    """The number a named group holds, where the text said it (an optional group may be absent)."""
    return lambda m: number(m.group(group), unit) if m.group(group) is not None else None


TRITON_GROWTH = MiB  # the python backend's shm-growth-byte-size by default: its least step


def _triton_needed(m: re.Match[str]) -> int | None:
    # 'to requested size (N bytes)' asks N; 'Failed to increase … to N bytes' names the pool it had (python_backend
    # shm_manager.cc prints the size before the growth): it needed at least one step more
    pool = number(m.group("bytes")) if m.group("bytes") else None
    return pool if m.group("requested") or pool is None else pool + TRITON_GROWTH


_UNIT = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _stated_size(m: re.Match[str]) -> int | None:
    # '1G', '1 GB', '512MiB' as a person writes a /dev/shm size: binary, as Docker's --shm-size reads it
    n, unit = (m.group("n"), m.group("unit")) if m.group("n") else (m.group("n2"), m.group("unit2"))
    return number(n, _UNIT[unit.lower()])


def _ray_shm_size(m: re.Match[str]) -> int | None:
    # Ray prints '--shm-size=X.XXgb' with X = object store bytes * 1.1 / 2**30 (ray-project/ray#40736)
    return number(m.group("gb"), 2**30) if m.group("gb") else None


# '</torch_31911_952036340_6686>'; '</torch>' where the user cut the name
_TORCH_FILE = rf"</?(?:dev/shm/)?torch(?:_\w{{1,{NAME}}})?>"
_NCCL_DENIED = re.compile(r"Cuda failure 'invalid argument'")
_WORKER = rf"DataLoader worker \(pids?\(?s?\)? [0-9, ]{{1,{GAP}}}\)"
# pid: not always said, or said as a placeholder ('(pid ...)')
_PIDS = rf"DataLoader worker(?: \(pids?\(?s?\)? [^)]{{1,{GAP}}}\))? is killed by signal"
# 'exited with code', 'exits with error code', 'exit with code', 'Exited with 137', 'exit code: 137', 'exit status',
# 'status code', 'Subprocess return code: 137', 'returned non-zero exit status'; '-137' where a runtime negates it
_EXIT = (
    rf"(?:[Ee]xit(?:ed|s)? with(?: error| exit)?(?: code)?|[Ee]xit [Cc]ode:?|exit status|status code|"
    rf"(?:[Rr]eturn|[Ee]rror) code:?|returned non-zero exit status) {{1,{NUM}}}-?"
)
_SHM_NAME = rf"'/[^/'\s]{{1,{NAME}}}'"  # a POSIX shared memory name: one component after the slash
# torchrun's 'failed (exitcode: -7)' and its report's 'exitcode  : -7'
_TORCHRUN = rf"exitcode {{0,{NUM}}}: {{0,{NUM}}}"
_RAY_PREFIX = rf"^\((?:raylet|[A-Za-z_]{{0,{NAME}}} ?pid=[0-9]{{1,{NUM}}})[^)]{{0,{NAME}}}\) "  # '(RayWorker pid=1)'
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
        "torch-shm-write",
        "shm-space",
        "dataloader",
        "unable to write to file",
        # as it ends, or cut by the user ('…', '.....'): no errno said after it
        re.compile(rf"unable to write to file {_TORCH_FILE}(?: at \S{{1,{NAME}}})?[\s.…]{{0,{GAP}}}$"),
        "PyTorch 1.x THAllocator's write check, no errno said: huaweicloud/dls-example#26, MIC-DKFZ/nnUNet#294, "
        "NVIDIA/flownet2-pytorch#43",
        "a process could not write a tensor into /dev/shm to share it (PyTorch 1.x): it is full",
        superseded_by=("torch-shm-enospc",),
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
        "torch-shm-errno0",
        "shm-space",
        "dataloader",
        "Success (0)",
        re.compile(rf"unable to allocate shared memory\(shm\) for file {_TORCH_FILE}: Success \(0\)"),
        "PyTorch 2.11's MapAllocator on the H200 machine, a 256 MiB /dev/shm full of pinned batches "
        "(docs/gpu-run-dose.md): posix_fallocate returns its error instead of setting errno, so errno 0 is printed",
        "a DataLoader worker could not allocate a batch in /dev/shm (the errno says 0, Success; it means out of space)",
    ),
    Signature(
        "torch-worker-bus-error",
        "shm-space",
        "dataloader",
        "error encountered in",
        # PaddlePaddle's handler: 'Unexpected BUS error encountered in DataLoader worker. This might be caused by…';
        # the handler's own words are enough where the paste cuts its hint (horovod/horovod#1081)
        re.compile(r"[Uu]nexpected (?:bus|BUS) error encountered in (?:DataLoader )?worker\b"),
        "PyTorch's worker SIGBUS handler: tengshaofeng/ResidualAttentionNetwork-pytorch#2, "
        "open-mmlab/mmsegmentation#1356; PaddlePaddle's: PaddlePaddle/PaddleSpeech#790",
        "a DataLoader worker died of a bus error touching a page it could not get",
        ambiguous=True,
    ),
    Signature(
        "torch-worker-killed-bus-error",
        "shm-space",
        "dataloader",
        "is killed by signal: Bus",  # 'Bus' ends the line where a message wraps before 'error' (fastai#21)
        re.compile(rf"{_PIDS}: Bus error"),
        "PyTorch's main process on a worker's SIGBUS: pytorch#5040, XPixelGroup/BasicSR#59",
        "a DataLoader worker was killed by a bus error",
        ambiguous=True,
        superseded_by=("torch-worker-bus-error",),
    ),
    Signature(
        "paddle-shared-storage",
        "shm-space",
        "dataloader",
        "insufficient shared storage space",
        re.compile(r"It may be caused by insufficient shared storage space"),
        "PaddlePaddle's main process on a DataLoader worker's SIGBUS (imperative/data_loader.cc): "
        "PaddlePaddle/Paddle#25211",
        "a PaddlePaddle DataLoader worker died of a bus error (its words: insufficient shared storage space)",
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
        "torch-worker-exited",
        "shm-space",
        "dataloader",
        "exited unexpectedly",
        re.compile(rf"{_WORKER} exited unexpectedly(?! with exit code [0-9])"),
        "PyTorch's main process on a worker gone without a word: facebookresearch/detectron2#384, "
        "openclimatefix-archives/nowcasting_dataset#194",
        "a DataLoader worker died without saying why: a bus error in a full /dev/shm, or the OOM killer "
        "(`df -h /dev/shm` and `dmesg | grep -i oom` where it ran tell which)",
        ambiguous=True,
        superseded_by=(
            "torch-worker-bus-error",
            "torch-worker-killed-bus-error",
            "torch-worker-killed",
            "torch-shm-enospc",
            "torch-shm-write",
        ),
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
        superseded_by=("python-semlock-gone",),
    ),
    Signature(
        "torch-shm-denied",
        "shm-missing",
        "dataloader",
        "in read-write mode: Permission denied",
        re.compile(rf"unable to open shared memory object {_TORCH_FILE} in read-write mode: Permission denied"),
        "PyTorch's shm_open (THManagedMapAllocator) in a /dev/shm not writable for the user: made here (uid 1000, "
        "--tmpfs /dev/shm:mode=755)",
        "PyTorch could not create a shared tensor's segment (a worker's batch) in /dev/shm: it is not writable for "
        "this user",
    ),
    Signature(
        "torch-shm-read-only",
        "shm-missing",
        "dataloader",
        "in read-write mode: Read-only file system",
        re.compile(rf"unable to open shared memory object {_TORCH_FILE} in read-write mode: Read-only file system"),
        "PyTorch's shm_open (THManagedMapAllocator) in a read-only /dev/shm: made here (--tmpfs /dev/shm:ro)",
        "PyTorch could not create a shared tensor's segment (a worker's batch) in /dev/shm: it is mounted read-only",
    ),
    Signature(
        "python-semlock-enospc",
        "shm-space",
        "multiprocessing",
        "No space left on device",
        re.compile(
            rf"^OSError: \[Errno 28\] No space left on device\s{{0,{GAP}}}$"
            # a traceback pasted on one line; from the line's start, as nccl-system-error: one start, not one a SemLock
            rf"|^.{{0,{GAP}}}?SemLock\(.{{0,{GAP}}}OSError: \[Errno 28\] No space left on device"
        ),
        "CPython multiprocessing.synchronize.SemLock (sem_open in /dev/shm): python/cpython#93253, "
        "Shippable/support#3681",
        "Python could not create a semaphore (a Lock, a Queue, a Pool) in /dev/shm: it is full",
        only_after=re.compile(r"SemLock"),
    ),
    Signature(
        "python-semlock-denied",
        "shm-missing",
        "multiprocessing",
        "[Errno 13] Permission denied",
        re.compile(rf"^(?:PermissionError|OSError): \[Errno 13\] Permission denied\s{{0,{GAP}}}$"),
        "CPython multiprocessing.synchronize.SemLock (sem_open in /dev/shm): nix-community/nix-on-droid#138, "
        "travis-ci/travis-ci#943; made here (uid 1000, --tmpfs /dev/shm:mode=755)",
        "Python could not create a semaphore (a Lock, a Queue, a Pool) in /dev/shm: it is not writable for this user",
        only_after=re.compile(r"SemLock"),
    ),
    Signature(
        "python-semlock-read-only",
        "shm-missing",
        "multiprocessing",
        "[Errno 30] Read-only file system",
        re.compile(rf"^OSError: \[Errno 30\] Read-only file system\s{{0,{GAP}}}$"),
        "CPython multiprocessing.synchronize.SemLock (sem_open in /dev/shm): made here (--tmpfs /dev/shm:ro)",
        "Python could not create a semaphore (a Lock, a Queue, a Pool) in /dev/shm: it is mounted read-only",
        only_after=re.compile(r"SemLock"),
    ),
    Signature(
        "joblib-semlock-enospc",
        "shm-space",
        "joblib",
        "joblib will operate in serial mode",
        re.compile(rf"\[Errno 28\] No space left on device\. {{1,{NUM}}}joblib will operate in serial mode"),
        "joblib's _multiprocessing_helpers (a SemLock it tries): Plachtaa/VITS-fast-fine-tuning#397",
        "joblib could not create a semaphore in /dev/shm (it is full) and runs serially",
    ),
    Signature(
        "python-semlock-gone",
        "remove-ipc",
        "multiprocessing",
        "No such file or directory",
        re.compile(rf"^FileNotFoundError: \[Errno 2\] No such file or directory\s{{0,{GAP}}}$"),
        "CPython SemLock._rebuild in a spawned child: mlcommons/storage#447 (RemoveIPC), screetsec/Sudomy#126",
        "a semaphore a child reopens by name was gone from /dev/shm: deleted under the job (systemd-logind's "
        "RemoveIPC at logout), or its creator ended first",
        only_after=re.compile(r"SemLock._rebuild"),
    ),
    Signature(
        "python-shm-exists",
        "shm-leak",
        "unknown",
        "File exists: '/",
        re.compile(rf"FileExistsError: \[Errno 17\] File exists: {_SHM_NAME}"),
        "CPython multiprocessing.shared_memory / shm_open(O_EXCL): mosaicml/streaming#689, dirac-institute/sorcha#476",
        "a named segment was already in /dev/shm: left behind by a run that ended without unlinking it",
    ),
    Signature(
        "shm-file-enospc",
        "shm-space",
        "unknown",
        "No space left on device",
        re.compile(
            rf"No space left on device: '/dev/shm/|/dev/shm/[^'\"`\s]{{1,{GAP}}}['\"`]: No space left on device"
        ),
        "a copy or a write into /dev/shm (cp, Python's open, tempfile): OpenELEC/OpenELEC.tv#1544",
        "a file could not be written in /dev/shm: it is full",
    ),
    Signature(
        "shm-size-required",
        "shm-space",
        "unknown",
        "at least",
        # a program's own check of its /dev/shm before it starts: '/dev/shm (--shm-size) needs to be at least 1G'
        # (an Oracle XE image), 'needs at least 1 GB of shared memory (/dev/shm)' (oracle/docker-images runOracle.sh)
        re.compile(
            rf"(?:/dev/shm|shm[-_]size|[Ss]hared memory).{{0,{NAME}}}?\bat least (?P<n>{NUMBER}) ?"
            rf"(?P<unit>[KkMmGgTt])(?:i?[Bb])?\b"
            rf"|\bat least (?P<n2>{NUMBER}) ?(?P<unit2>[KkMmGgTt])(?:i?[Bb])? of (?:shared memory|/dev/shm)"
        ),
        "a program's check of /dev/shm's size before it starts: testcontainers/testcontainers-java#952 (Oracle XE), "
        "oracle/docker-images' runOracle.sh",
        "the program says /dev/shm is smaller than it needs, and names the size",
        needed=_stated_size,
    ),
    Signature(
        "postgres-shm-removed",
        "remove-ipc",
        "postgresql",
        "could not open shared memory segment",
        re.compile(rf'could not open shared memory segment "/PostgreSQL\.[0-9]{{1,{NUM}}}": No such file or directory'),
        "PostgreSQL's dynamic shared memory: autobase-tech/autobase#1200, cloudfoundry/postgres-release#73",
        "a PostgreSQL segment was deleted from /dev/shm under the server: systemd-logind's RemoveIPC at logout",
    ),
    Signature(
        "torch-ancdata",
        "fd-limit",
        "dataloader",
        "items of ancdata",
        re.compile(r"received (?:0|%d) items of ancdata"),  # or the raise's source line in a cut traceback
        "Python's multiprocessing.reduction.recvfds under the file_descriptor strategy: pytorch#973, pytorch#41465",
        "the training process ran out of file descriptors receiving shared batches (one per tensor)",
    ),
    Signature(
        "torch-shm-emfile",
        "fd-limit",
        "dataloader",
        "Too many open files",
        re.compile(
            rf"(?:unable to open shared? memory objec.{{0,{GAP}}}Too many open files"
            r"|OSError: \[Errno 24\] Too many open files|Too many open files\. Communication with the workers)"
        ),
        "PyTorch shm_open / DataLoader's fd diagnosis (pytorch#34768), pytorch#11201",
        "the process ran out of file descriptors (each shared tensor holds one under the file_descriptor strategy)",
        superseded_by=("torch-ancdata",),
    ),
    Signature(
        "torch-shm-open",
        "fd-limit",
        "dataloader",
        "in read-write mode",
        # PyTorch 1.0's THAllocator said no errno ('… in read-write mode at …/THAllocator.c:342'); the errnos said
        # since are their own signatures
        re.compile(rf"unable to open shared memory object \S{{1,{NAME}}} in read-write mode(?!: )"),
        "PyTorch 1.0 THAllocator (no errno said): pytorch/pytorch#14768 (the maintainers: the open-files limit), "
        "pytorch/pytorch#11201; torch.multiprocessing's docs: the file_descriptor strategy holds a descriptor a "
        "shared tensor",
        "a process could not open a shared tensor's segment (PyTorch 1.0 did not print why): most often it ran out "
        "of file descriptors, each shared tensor holding one; PyTorch 1.1 and later print the errno (No such file "
        "or directory: no /dev/shm)",
        superseded_by=("torch-shm-emfile", "torch-shm-missing", "torch-shm-denied", "torch-shm-read-only"),
    ),
    Signature(
        "torch-mmap-enomem",
        "not-shm",
        "dataloader",
        "Cannot allocate memory",
        re.compile(
            rf"unable to mmap [0-9]{{1,{NUM}}} bytes from file (?:{_TORCH_FILE}|<filename not specified>): "
            r"Cannot allocate memory \(12\)"
        ),
        "PyTorch MapAllocator's mmap() failing with ENOMEM: kohya-ss/sd-scripts#1790 (fixed by raising "
        "vm.max_map_count), pytorch#87861, Pointcept/Pointcept#136",
        "mapping a shared tensor failed with ENOMEM: the process hit the kernel's limit on mappings "
        "(vm.max_map_count, 65530 by default, one a shared tensor) or ran out of memory, not /dev/shm's space",
    ),
    Signature(
        "torch-shm-unlink",
        "remove-ipc",
        "dataloader",
        "could not unlink the shared memory file",
        # its name as printed (/torch_<pid>_<random>_<n>) or as a user redacts it ('/torch_<pid>_<id>_<n>')
        re.compile(rf"could not unlink the shared memory file /torch_(?:\w|<\w{{1,{NUM}}}>){{1,{NAME}}}"),
        "PyTorch THRefcountedMapAllocator: mlcommons/storage#528 (systemd-logind RemoveIPC=yes), pytorch#30225",
        "a segment of the file_system strategy was deleted under the job: systemd-logind's RemoveIPC at logout",
    ),
    Signature(
        "python-shm-leaked",
        "shm-leak",
        "multiprocessing",
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
        # the call that failed before it says why: shm_open's EACCES (nccl#328), ftruncate's or fallocate's ENOSPC
        superseded_by=("nccl-shm-extend", "nccl-shm-open-denied"),
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
        # From the line's start: one start, not one a repeat of 'NCCL error' (each then scanning GAP characters)
        re.compile(
            rf"^.{{0,{GAP}}}?(?:(?:NCCL [Ee]rror|NCCL failure|ncclSystemError).{{0,{GAP}}}unhandled system error"
            rf"|unhandled system error.{{0,{GAP}}}NCCL)"
        ),
        "NCCL via PyTorch ProcessGroupNCCL: NVIDIA/nccl#473, vllm-project/vllm#10626, pytorch/ci-infra#490",
        "NCCL failed a system call (NCCL_DEBUG=INFO says which: its shared-memory transport, sockets, IB, CUDA)",
        ambiguous=True,
        superseded_by=("nccl-shm-extend", "nccl-shm-create", "nccl-fallocate", "nccl-shm-open-denied"),
    ),
    Signature(
        "nccl-system-call",
        "shm-space",
        "nccl",
        "ncclSystemError: System call",
        # NCCL's words for ncclSystemError as PyTorch prints them: 'System call (socket, malloc, munmap, etc) failed.'
        # (2.7-2.17), 'System call (e.g. socket, malloc) or external library call failed or device error.' (2.18+)
        re.compile(r"ncclSystemError: System call \((?:socket|e\.g\. socket)"),
        "NCCL's ncclGetErrorString via PyTorch: pytorch/pytorch#54822, NVIDIA/nccl#834",
        "NCCL failed a system call (NCCL_DEBUG=INFO says which: its shared-memory transport, sockets, IB, CUDA)",
        ambiguous=True,
        superseded_by=(
            "nccl-system-error",
            "nccl-shm-extend",
            "nccl-shm-create",
            "nccl-fallocate",
            "nccl-shm-open-denied",
        ),
    ),
    Signature(
        "vllm-shm-insufficient",
        "shm-space",
        "vllm",
        "Insufficient space in /dev/shm",
        re.compile(
            # and its CPU offloading's (vllm-project/vllm#52496): 'Insufficient space in /dev/shm:\n4095/4096 MiB
            # required, 1405 MiB free' (what it has of the size asked, then that size)
            rf"Insufficient space in /dev/shm(?: for (?P<name>\S{{1,{NAME}}}))?: (?:[0-9]{{1,{NUM}}}/)?"
            rf"(?P<mib>{NUMBER}) MiB required, (?P<free>{NUMBER}) MiB free"
        ),
        "vLLM 0.33 distributed/device_communicators/shm_broadcast.py (FACTS.md); its CPU offloading: "
        "vllm-project/vllm#52496",
        "vLLM could not create a shared-memory ring buffer",
        needed=_bytes("mib", MiB),
        had=_bytes("free", MiB),
    ),
    Signature(
        "sglang-shm-fallback",
        "shm-space",
        "sglang",
        "Consider increasing /dev/shm size",
        # from the line's start, as nccl-system-error: one start a line, not one a repeat of 'fall back'
        re.compile(rf"^.{{0,{GAP}}}?(?i:fall(?:ing)? ?back).{{0,{GAP}}}Consider increasing /dev/shm size"),
        "SGLang 0.5.23 multimodal tensor transport (FACTS.md)",
        "SGLang fell back from /dev/shm for multimodal tensors (slower): posix_fallocate failed",
    ),
    Signature(
        "ray-object-store-tmp",
        "shm-space",
        "ray",
        "because /dev/shm has only",
        # 1.x and later: 'object store is using /tmp instead of /dev/shm because …'; 0.x: 'Reducing object store
        # memory because …'; the start of a message wrapped at a space is on the line before
        re.compile(
            rf"because /dev/shm has only (?P<avail>{NUMBER}) bytes available"
            rf"(?:.{{0,{GAP}}}?--shm-size=(?P<gb>{NUMBER})gb)?"
        ),
        "Ray _private/services.py: ray-project/ray#11951, ray-project/ray#14616, InftyAI/llmaz#238; Ray 0.x's "
        "'Reducing object store memory because…': ray-project/ray#3029; seen here",
        "Ray put its object store on disk instead of /dev/shm, or shrank it to fit (it works, slowly)",
        needed=_ray_shm_size,
        had=_bytes("avail"),
    ),
    Signature(
        "ray-object-store-too-big",
        "shm-space",
        "ray",
        "The configured object store size",
        # 'exceeds the capacity of /dev/shm' without the sizes: Ray 1.x (ray-project/ray#14535)
        re.compile(
            rf"The configured object store size (?:\((?P<gb>{NUMBER}) GB\) exceeds /dev/shm size \((?P<shm>{NUMBER}) "
            r"GB\)|exceeds the capacity of /dev/shm)"
        ),
        "Ray _private/services.py: ray-project/ray#16308, ray-project/ray#14535",
        "Ray refused to start: its object store does not fit in /dev/shm",
        needed=_bytes("gb", GB),
        had=_bytes("shm", GB),
    ),
    Signature(
        "ray-plasma-request",
        "shm-space",
        "unknown",  # plasma's words: Ray's raylet, or Arrow's plasma store under another (Mars): the block says who
        "exceeds memory available in /dev/shm",
        # the sizes may be wrapped to the next line or quoted from the source ('<system_memory> bytes')
        re.compile(
            r"System memory request exceeds memory available in /dev/shm\. The request is for"
            rf"(?: (?P<bytes>{NUMBER}) bytes, and the amount available is (?P<avail>{NUMBER}) bytes)?"
        ),
        "Ray's raylet store_runner.cc: gpustack/gpustack#5014; Arrow's plasma store.cc, which Ray's forked: "
        "mars-project/mars#1430",
        "a plasma store (Ray's object store, Arrow's plasma) could not have the /dev/shm it asked for",
        needed=_bytes("bytes"),
        had=_bytes("avail"),
    ),
    Signature(
        "ray-sigbus",
        "shm-space",
        "ray",
        "SIGBUS received",
        re.compile(rf"{_RAY_PREFIX}.{{0,{GAP}}}\*\*\* SIGBUS received"),
        "Ray's signal handler in a worker or the raylet: vllm-project/vllm#859, Visual-Agent/DeepEyes#49, "
        "verl-project/verl#3218",
        "a Ray process died of a bus error: a page of its object store (/dev/shm) could not be had",
        ambiguous=True,
    ),
    Signature(
        "ray-bus-error",
        "shm-space",
        "ray",
        "Fatal Python error: Bus error",
        re.compile(rf"{_RAY_PREFIX}Fatal Python error: Bus error"),
        "Python's faulthandler in a Ray worker: ray-project/ray#4989, vllm-project/vllm#1894",
        "a Ray worker died of a bus error: a page of its object store (/dev/shm) could not be had",
        ambiguous=True,
        superseded_by=("ray-sigbus",),
    ),
    Signature(
        "triton-shm-pool",
        "shm-space",
        "triton",
        "shared memory ",
        # The size and the error may be cut off (a title, a table cell); an error said must be No space left
        re.compile(
            r"(?:Failed to increase the shared memory pool size for|Unable to initialize shared memory) key "
            rf"'(?P<key>[^']{{1,{NAME}}})' to (?:(?P<requested>requested size \()?(?P<bytes>{NUMBER}) bytes|"
            rf"requested size\b)(?!.{{0,{GAP}}}Error: (?!No space left on device))"
        ),
        "Triton python backend: triton-inference-server/server#5681, #6156, #6195, aws/amazon-sagemaker-examples#3506",
        "a Triton python-backend instance could not grow its shared-memory region",
        needed=_triton_needed,
    ),
    Signature(
        "triton-shm-missing",
        "shm-missing",
        "triton",
        "If you are running Triton inside docker",
        re.compile(
            rf"Unable to initialize shared memory key '[^']{{1,{NAME}}}' to requested size \({NUMBER} bytes\)"
            rf".{{0,{GAP}}}Error: No such file or directory"
        ),
        "Triton python backend's shm_open: aws/sagemaker-python-sdk#2801",
        "a Triton python-backend instance could not create its region: there is no /dev/shm to create it in",
    ),
    Signature(
        "triton-shm-exists",
        "shm-leak",
        "triton",
        "If you are running Triton inside docker",
        re.compile(
            rf"Unable to initialize shared memory key '[^']{{1,{NAME}}}' to requested size \({NUMBER} bytes\)"
            rf".{{0,{GAP}}}Error: File exists"
        ),
        "Triton python backend's shm_open(O_EXCL): triton-inference-server/server#3036",
        "a Triton python-backend region of that name was already in /dev/shm: left behind by a Triton that ended "
        "without removing it, or made by another server sharing this /dev/shm",
    ),
    Signature(
        "triton-shm-unshared",
        "shm-missing",
        "triton",
        "Unable to open shared memory region",
        # the server's shm_open of a region its client registered (O_RDWR, no O_CREAT): there is none of that name
        re.compile(rf"Unable to open shared memory region: '(?P<key>[^']{{1,{NAME}}})'"),
        "Triton's shared_memory_manager.cc OpenSharedMemoryRegion: triton-inference-server/server#2296 (a client "
        "and a server in two containers; --ipc=host, the maintainer)",
        "Triton's server could not open a region its client registered: the client made it in a /dev/shm the "
        "server does not see (another container or pod), or removed it first",
    ),
    Signature(
        "triton-out-of-shm",
        "shm-space",
        "triton",
        "run out of shared memory",
        re.compile(rf"Failed to initialize the model instance \S{{1,{NAME}}} because it run out of shared memory"),
        "Triton python backend: triton-inference-server/server#2749",
        "a Triton python-backend model instance could not start: /dev/shm ran out",
    ),
    Signature(
        "postgres-shm-resize",
        "shm-space",
        "postgresql",
        "could not resize shared memory segment",
        # dsm_impl.c (posix): the segment of one parallel query; 'pq: …' from Go's lib/pq cuts the name and size
        re.compile(
            rf'could not resize shared memory segment(?: "/PostgreSQL\.[0-9]{{1,{NUM}}}" to (?P<bytes>{NUMBER}) bytes)?'
            r"[:.] No space left on device"
        ),
        "PostgreSQL's dynamic shared memory (dsm_impl.c, posix): docker-library/postgres#416, goharbor/harbor#15034, "
        "FraunhoferIOSB/FROST-Server#123, rudderlabs/rudder-server#5541",
        "PostgreSQL could not size a parallel query's segment in /dev/shm (the size it names is that one segment's, "
        "not the server's whole need: each parallel worker of each running query takes its own)",
        needed=_bytes("bytes"),
    ),
    Signature(
        "chromium-shm-denied",
        "shm-missing",
        "chromium",
        "Creating shared memory in",
        # EPERM where a sandbox refuses it (a snap's confinement: snapcrafters/mattermost-desktop#46)
        re.compile(
            rf"Creating shared memory in /dev/shm/\S{{1,{NAME}}} failed: (?:Permission denied|Operation not permitted)"
        ),
        "Chromium's shared_memory_posix.cc: its FATAL line says 'Try sudo chmod 1777 /dev/shm to fix'",
        "Chrome/Chromium could not create a shared-memory region in /dev/shm: it is not writable for this user",
    ),
    Signature(
        "chromium-shm-read-only",
        "shm-missing",
        "chromium",
        "Creating shared memory in",
        re.compile(rf"Creating shared memory in /dev/shm/\S{{1,{NAME}}} failed: Read-only file system"),
        "Chromium's shared_memory_posix.cc ('shm_open() failed: Read-only file system' before it)",
        "Chrome/Chromium could not create a shared-memory region in /dev/shm: it is mounted read-only",
    ),
    Signature(
        "chromium-shm-missing",
        "shm-missing",
        "chromium",
        "Creating shared memory in",
        re.compile(rf"Creating shared memory in /dev/shm/\S{{1,{NAME}}} failed: No such file or directory"),
        "Chromium's platform_shared_memory_region_posix.cc on a platform without /dev/shm (Vercel, AWS Lambda)",
        "Chrome/Chromium could not create a shared-memory region: there is no /dev/shm",
    ),
    Signature(
        "chromium-broker-handles",
        "shm-space",
        "chromium",
        "Received unexpected number of handles",
        # mojo's broker client: the browser answered a shared buffer request without the buffer's handle (it could
        # not make the region)
        re.compile(r"broker_posix\.cc\([0-9]{1,6}\)\] Received unexpected number of handles"),
        "Chromium mojo/core/broker_posix.cc (a renderer's request for a shared buffer): ongardie/cubicle#3 (VS "
        "Codium in Docker, --shm-size the workaround)",
        "a Chromium process asked its browser for a shared-memory buffer and got none: in a container, most often "
        "its /dev/shm (64 MiB) ran out",
        ambiguous=True,
    ),
    Signature(
        "chromium-page-crash",
        "shm-space",
        "chromium",
        "page crash",
        re.compile(r"session deleted because of page crash"),
        "ChromeDriver (Selenium) on a crashed tab: SeleniumHQ/docker-selenium#589, #431, elgalu/docker-selenium#20",
        "a Chrome tab crashed under Selenium: in a container, most often its /dev/shm (64 MiB) ran out",
        ambiguous=True,
    ),
    Signature(
        "puppeteer-page-crash",
        "shm-space",
        "chromium",
        "Page crashed!",
        re.compile(r"Error: Page crashed!"),
        "Puppeteer's Page on Inspector.targetCrashed (its troubleshooting guide: /dev/shm in Docker)",
        "a Chrome page crashed under Puppeteer: in a container, most often its /dev/shm (64 MiB) ran out",
        ambiguous=True,
    ),
    Signature(
        "playwright-target-crashed",
        "shm-space",
        "chromium",
        "Target crashed",
        re.compile(r"(?:page|frame|locator)\.\w{1,40}: Target crashed"),
        "Playwright's error on a crashed page (its Docker docs: --ipc=host, 'Chromium can run out of memory')",
        "a browser page crashed under Playwright: in a container, most often its /dev/shm (64 MiB) ran out",
        ambiguous=True,
    ),
    Signature(
        "ucx-posix-enospc",
        "shm-space",
        "unknown",
        "Not enough memory to write total of",
        # UCX's posix memory domain on ENOSPC writing its segment (UCX_POSIX_DIR, /dev/shm by default)
        re.compile(rf"Not enough memory to write total of {NUMBER} bytes"),
        "UCX uct/sm/mm/posix/mm_posix.c (its next words: 'Please check that /dev/shm or the directory you specified "
        "has more available memory')",
        "UCX's shared-memory transport could not write its segment: /dev/shm (or UCX_POSIX_DIR) is full",
    ),
    Signature(
        "ucx-mm-fifo",
        "shm-space",
        "unknown",
        "mm_iface failed to allocate",
        re.compile(r"mm_iface failed to allocate receive FIFO"),
        "UCX uct/sm/mm/base/mm_iface.c (its FIFO in the posix or sysv memory domain): "
        "NVIDIA/ai-cloud-validation#643 (a pod with no /dev/shm volume)",
        "UCX's shared-memory transport could not allocate its receive FIFO: /dev/shm (its posix domain) ran out",
        ambiguous=True,
    ),
    Signature(
        "ompi-shm-open-denied",
        "shm-leak",
        "unknown",
        "Permission denied (errno 13)",
        # Open MPI's help text '[sys call fail]': its segment's name is the job's, so EACCES is another's file of it
        re.compile(r"Error: {1,40}Permission denied \(errno 13\)"),
        "Open MPI's help-mpi-common-sm / btl sm 'A system call failed during shared memory initialization': "
        "open-mpi/ompi#7308 (leftover segment files of other users' jobs, #6322, #6547)",
        "Open MPI could not open its shared-memory segment file (EACCES): a file of that name is there and belongs "
        "to another user, left by an earlier job (`ls -l /dev/shm` shows whose); or the directory is not writable",
        only_after=re.compile(r"System call: open\(2\)"),
    ),
    Signature(
        "oracle-memory-target",
        "shm-space",
        "oracle",
        "ORA-00845",
        # Automatic Memory Management keeps the SGA and the PGA as files in /dev/shm: it must hold MEMORY_TARGET
        re.compile(r"ORA-00845: MEMORY_TARGET not supported on this system"),
        "Oracle Database's error reference (ORA-00845: /dev/shm not sized correctly for MEMORY_TARGET): "
        "wscherphof/oracle-12c#8",
        "Oracle could not start with its MEMORY_TARGET: /dev/shm (where Automatic Memory Management keeps the SGA) "
        "is smaller than it",
    ),
    Signature(
        "oracle-joxshm",
        "shm-space",
        "oracle",
        "ORA-04035",
        # the JVM's shared object cache (JOXSHM, files in /dev/shm); not ORA-04031 (the SGA's shared pool)
        re.compile(rf'ORA-04035: unable to allocate {NUMBER} bytes of shared memory in shared object cache "JOXSHM'),
        "Oracle's JVM shared object cache (its JOXSHM_EXT files in /dev/shm): oracle/docker-images#223",
        "Oracle's Java VM could not grow its shared object cache (JOXSHM) in /dev/shm",
    ),
    Signature(
        "fastdds-shm-port",
        "shm-leak",
        "unknown",
        "RTPS_TRANSPORT_SHM Error",
        re.compile(r"\[RTPS_TRANSPORT_SHM Error\] Failed init_port \S{1,255}: open_and_lock_file failed"),
        "Fast DDS's shared-memory transport (ROS 2): eProsima/Fast-DDS#5737 (a stale port file in /dev/shm)",
        "Fast DDS could not open its port's segment: a stale port file (fastrtps_port*, its *_el lock) left in "
        "/dev/shm by a process that died, or another user's: `ls -la /dev/shm/fastrtps_*` shows them",
    ),
    Signature(
        "k8s-emptydir-evicted",
        "shm-space",
        "unknown",
        "Usage of EmptyDir volume",
        EMPTYDIR_EVICTED,  # its sizeLimit is where it ran's /dev/shm (clues.py)
        "the kubelet's eviction manager (localStorageEviction): kubernetes/kubernetes#28272, helm/charts#24458",
        "the pod was evicted: its /dev/shm (a memory-backed emptyDir) grew past its sizeLimit",
    ),
    Signature(
        "x11-shm-unshared",
        "shm-missing",
        "unknown",
        "(MIT-SHM)",
        # X_ShmAttach refused: the client's System V segment is in an IPC namespace the server does not see; Xlib's
        # report ('Major opcode of failed request:'), Qt's xcb one ('Extension:') and GDK's ('request_code')
        re.compile(
            r"(?:Major opcode of failed request|Extension): {1,40}[0-9]{1,3} \(MIT-SHM\)"
            r"|request_code [0-9]{1,3} \(MIT-SHM\)"
        ),
        "Xlib's, Qt's and GDK's error reports on the MIT-SHM extension: pauleve/docker-mtgo#1, "
        "bambulab/BambuStudio#1638 (--ipc=host fixed both)",
        "the X server could not attach the client's shared-memory segment (MIT-SHM): they are in different IPC "
        "namespaces (a container); --ipc=host, or the program without MIT-SHM (QT_X11_NO_MITSHM=1)",
        only_after=re.compile(r"BadAccess"),
    ),
    Signature(
        "gunicorn-sigbus",
        "shm-space",
        "unknown",
        "was sent SIGBUS",
        re.compile(rf"Worker \(pid:[0-9]{{1,{NUM}}}\) was sent SIGBUS"),
        "gunicorn's arbiter on a worker killed by a signal (gunicorn 20.1+); prometheus_client's multiprocess files "
        "(PROMETHEUS_MULTIPROC_DIR in /dev/shm) are mapped and grow",
        "a gunicorn worker died of a bus error: a page of a mapped file (prometheus_client's multiprocess files in "
        "/dev/shm, most often) could not be had",
        ambiguous=True,
    ),
    Signature(
        "go-exec-bus-error",
        "shm-space",
        "unknown",
        "signal: bus error",
        re.compile(r"\bsignal: bus error\b"),
        "Go's os/exec ExitError of a child killed by SIGBUS (a supervisor's JSON log line)",
        "a child process died of a bus error: a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "python-semlock-enosys",
        "shm-missing",
        "multiprocessing",
        "[Errno 38] Function not implemented",
        re.compile(rf"^OSError: \[Errno 38\] Function not implemented\s{{0,{GAP}}}$"),
        "CPython multiprocessing.synchronize.SemLock where no /dev/shm is mounted: AWS Lambda "
        "(aws/aws-lambda-base-images and its docs: no /dev/shm), chroots",
        "Python could not create a semaphore (a Lock, a Queue, a Pool): there is no /dev/shm mounted (AWS Lambda, "
        "a chroot)",
        only_after=re.compile(r"SemLock"),
    ),
    Signature(
        "podman-lock-missing",
        "shm-missing",
        "unknown",
        "locks in /libpod",
        # libpod/lock/shm/shm_lock.go CreateSHMLock: 'failed to create %d locks in %s: %w' (shm_open of
        # /libpod_lock, /libpod_rootless_lock_UID): ENOENT there is no /dev/shm to create it in
        re.compile(
            rf"failed to (?:create|open) [0-9]{{1,{NUM}}} locks in /libpod_(?:rootless_)?lock(?:_[0-9]{{1,{NUM}}})?: "
            r"(?i:no such file or directory)"
        ),
        "Podman's shm lock manager (libpod/lock/shm/shm_lock.go): lxc/lxc-ci#692 (Alpine containers without "
        "/dev/shm), osbuild/osbuild#2494 (/dev remounted without /dev/shm)",
        "Podman could not create its lock segment (/libpod_lock) in /dev/shm: there is no /dev/shm mounted",
    ),
    Signature(
        "389ds-region-space",
        "shm-space",
        "unknown",
        "No enough space left on device (/dev/shm",
        # bdb_layer.c / mdb_layer.c *_no_diskspace: 'No enough space left on device (%s) (%lu bytes); at least %lu
        # bytes space is needed for db region files' (the region directory: /dev/shm/slapd-INSTANCE by default)
        re.compile(
            rf"No enough space left on device \(/dev/shm/[^)\s]{{0,{NAME}}}\) \((?P<had>[0-9]{{1,{NUM}}}) bytes\); "
            rf"at least (?P<bytes>[0-9]{{1,{NUM}}}) bytes space is needed"
        ),
        "389 Directory Server's check of its db region directory (ldap/servers/slapd/back-ldbm/db-bdb/bdb_layer.c "
        "bdb_no_diskspace): 389ds/389-ds-base#5949 (FreeIPA in podman's 64m /dev/shm)",
        "389 Directory Server's db region files in /dev/shm need more than /dev/shm has free, and it says how much",
        needed=_bytes("bytes"),
        had=_bytes("had"),
    ),
    Signature(
        "snapd-shm-symlink",
        "shm-missing",
        "unknown",
        "is a symlink",
        # interfaces/builtin/shared_memory.go: a private shared-memory plug needs /dev/shm a tmpfs, not a symlink
        re.compile(r'shared-memory plug with "private: true" cannot be connected if "/dev/shm" is a symlink'),
        "snapd's shared-memory interface (private: true): microsoft/WSL#8996 (WSL makes /dev/shm a symlink)",
        "snapd could not give the snap its private /dev/shm: /dev/shm here is a symlink (WSL's /run/shm), not a "
        "tmpfs mount",
    ),
    Signature(
        "logind-removeipc",
        "remove-ipc",
        "unknown",
        "RemoveIPC",
        # a user's words of logind's RemoveIPC=yes (logind.conf(5): a user's System V and POSIX IPC objects are
        # removed when their last session ends): named as set, beside what it removed; not 'RemoveIPC=no'
        re.compile(
            rf"\bRemoveIPC\b(?![`'\"]?\s{{0,3}}=\s{{0,3}}(?:no|false|off|0)\b)[^.]{{0,{GAP}}}?"
            r"(?i:shared[ -]memory|segments?\b|semaphores?\b|/dev/shm)"
        ),
        "systemd-logind's RemoveIPC (logind.conf(5)): systemd/systemd#4532, systemd/systemd#2039 (PostgreSQL's "
        "segments removed when another session of its user logs out)",
        "the text names logind's RemoveIPC: it deletes a non-system user's shared memory when that user's last "
        "session ends",
    ),
    Signature(
        "shm-files-vanished",
        "remove-ipc",
        "unknown",
        "/dev/shm",
        # files of a running program gone from /dev/shm on their own: a sentence that says so, not of a reboot (a
        # tmpfs empties) or a cleaning
        re.compile(
            rf"(?:^|[.!?;]\s{{0,{NUM}}})(?![^.!?;]{{0,{GAP}}}\b(?:reboot|restart|clean|rm )|[^.!?;]{{0,{GAP}}}\brm -)"
            rf"[^.!?;]{{0,{GAP}}}?/dev/shm\b[^.!?;]{{0,{NAME}}}?\b(?:disappear(?:ed|s)?|vanish(?:ed|es)?|"
            r"(?:is|are|was|were) gone)\b"
        ),
        "eProsima/Fast-DDS#5576 (its segments deleted by systemd-logind's RemoveIPC), logind.conf(5)",
        "a program's files in /dev/shm disappeared while it ran: most often systemd-logind's RemoveIPC, deleting a "
        "non-system user's segments when that user's last session ends",
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
        re.compile(rf"^[\s*]{{0,{GAP}}}Killed[\s*]{{0,{GAP}}}$|(?:{_SHELL})Killed\b"),
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
        "exit-code-minus-7",
        "shm-space",
        "unknown",
        " -7",
        # Python's subprocess returncode and the launchers that print it: minus the signal that ended the child
        re.compile(rf"{_EXIT}(?<=-)7\b"),
        "a child's exit as Python's subprocess reports it (-signal): mars-project/mars#1430 ('exit with code -7')",
        "a process ended by SIGBUS (exit code -7): a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "exit-code-minus-9",
        "memory-limit",
        "unknown",
        " -9",
        re.compile(rf"{_EXIT}(?<=-)9\b"),
        "a child's exit as Python's subprocess reports it (-signal)",
        "a process ended by SIGKILL (exit code -9): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "torchrun-sigbus",
        "shm-space",
        "unknown",
        "exitcode",
        re.compile(rf"{_TORCHRUN}-7\b"),
        "torch.distributed.elastic on a rank's SIGBUS: hpcaitech/ColossalAI#3556, awslabs/slapo#114",
        "a rank died of a bus error (exitcode -7): a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "torchrun-sigkill",
        "memory-limit",
        "unknown",
        "exitcode",
        re.compile(rf"{_TORCHRUN}-9\b"),
        "torch.distributed.elastic on a rank's SIGKILL: OpenBMB/MiniCPM-V#770",
        "a rank was killed (exitcode -9): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "deepspeed-sigbus",
        "shm-space",
        "unknown",
        "xits with return code = -7",
        re.compile(r"[Ee]xits with return code = -7\b"),
        "DeepSpeed's launcher (launch.py sigkill_handler) on a rank's SIGBUS: deepspeedai/DeepSpeed#4002",
        "a rank died of a bus error (return code -7): a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "deepspeed-sigkill",
        "memory-limit",
        "unknown",
        "xits with return code = -9",
        re.compile(r"[Ee]xits with return code = -9\b"),
        "DeepSpeed's launcher (launch.py sigkill_handler) on a rank's SIGKILL: deepspeedai/DeepSpeed#4239",
        "a rank was killed (return code -9): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "caught-sigbus",
        "shm-space",
        "unknown",
        "Bus error: nonexistent physical address",
        re.compile(r"Bus error: nonexistent physical address"),
        "UCX's signal handler ('Caught signal 7 (Bus error: nonexistent physical address)'): "
        "huggingface/transformers-bloom-inference#16, hiyouga/LlamaFactory#2206",
        "a process died of a bus error: a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "spawn-sigbus",
        "shm-space",
        "unknown",
        "terminated with signal SIGBUS",
        re.compile(rf"process [0-9]{{1,{NUM}}} terminated with signal SIGBUS"),
        "torch.multiprocessing.spawn's ProcessExitedException on a child's SIGBUS: KdaiP/StableTTS#11; made here "
        "(a spawned child writing a mapped file bigger than a 64 MiB /dev/shm)",
        "a spawned process died of a bus error: a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "spawn-sigkill",
        "memory-limit",
        "unknown",
        "terminated with signal SIGKILL",
        re.compile(rf"process [0-9]{{1,{NUM}}} terminated with signal SIGKILL"),
        "torch.multiprocessing.spawn's ProcessExitedException on a child's SIGKILL: lyu-yx/ACUMEN#4, "
        "bert-nmt/bert-nmt#14; made here (a spawned child past docker run --memory=512m)",
        "a spawned process was killed (SIGKILL): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "subprocess-sigbus",
        "shm-space",
        "unknown",
        "died with <Signals.SIGBUS: 7>",
        re.compile(r"died with <Signals\.SIGBUS: 7>"),
        "Python's subprocess.CalledProcessError (its str: 'died with <Signals.SIGBUS: 7>', subprocess.py)",
        "a child process died of a bus error: a page of a mapped file, /dev/shm's most often, could not be had",
        ambiguous=True,
    ),
    Signature(
        "subprocess-sigkill",
        "memory-limit",
        "unknown",
        "died with <Signals.SIGKILL: 9>",
        re.compile(r"died with <Signals\.SIGKILL: 9>"),
        "Python's subprocess.CalledProcessError: bmaltais/kohya_ss#1065",
        "a child process was killed (SIGKILL): the OOM killer, whose count includes /dev/shm pages, or a kill",
        ambiguous=True,
    ),
    Signature(
        "k8s-oomkilled",
        "memory-limit",
        "unknown",
        "OOMKilled",
        # 'Reason: OOMKilled' (kubectl describe, a pod's status); the READY and STATUS columns of kubectl get pods
        re.compile(
            rf"(?:Reason|reason)\W{{1,{NUM}}}OOMKilled\b|\b[0-9]{{1,{NUM}}}/[0-9]{{1,{NUM}}}[ \t]{{1,{NUM}}}OOMKilled\b"
        ),
        "kubectl describe pod / the pod status / kubectl get pods: the container's memory limit was hit "
        "(hmcts/cnp-flux-config#28772)",
        "the container was OOM-killed: /dev/shm (an emptyDir of medium Memory) counts against its memory limit",
    ),
    Signature(
        "kernel-oom-kill",
        "memory-limit",
        "unknown",
        "of memory: Kill",
        # mm/oom_kill.c: 'Memory cgroup out of memory: Killed process 629 (onmt_train) …' at a cgroup's limit ('Kill
        # process' before Linux 5.0); as dmesg prints them
        re.compile(rf"Memory cgroup out of memory: Kill(?:ed)? process [0-9]{{1,{NUM}}}"),
        "the kernel's OOM killer (dmesg): ymoslem/OpenNMT-Tutorial#6",
        "the kernel's OOM killer killed a process: its memory (and /dev/shm pages, which count toward a memory "
        "cgroup's limit) ran out",
    ),
    Signature(
        "kernel-oom-global",
        "not-shm",
        "unknown",
        "Out of memory: Kill",
        # 'Out of memory: Killed process …' at the machine's (constraint=CONSTRAINT_NONE, global_oom)
        re.compile(rf"\bOut of memory: Kill(?:ed)? process [0-9]{{1,{NUM}}}"),
        "the kernel's OOM killer for the whole machine (mm/oom_kill.c): dask/distributed#6110",
        "the machine ran out of memory (the kernel's OOM killer, no memory limit hit): the processes' own memory; "
        "/dev/shm's pages count only as any memory (`df -h /dev/shm` there tells if it held much)",
    ),
    Signature(
        "ecs-oom-killed",
        "memory-limit",
        "unknown",
        "killed due to memory usage",
        re.compile(r"OutOfMemoryError: Container killed due to memory usage"),
        "Amazon ECS / AWS Batch (a task's stopped reason): aws/amazon-ecs-agent#1187, aws/copilot-cli#3470",
        "the container was OOM-killed at its memory limit (a memory-backed /dev/shm counts toward it)",
    ),
    Signature(
        "k8s-evicted-memory",
        "memory-limit",
        "unknown",
        "low on resource: memory",
        re.compile(r"The node was low on resource: memory"),
        "the kubelet's eviction manager (a pod's status message): kubeflow/kubeflow#1261",
        "the pod was evicted: its node ran low on memory (a memory-backed emptyDir at /dev/shm counts toward it)",
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
        superseded_by=(
            "shell-killed",
            "exit-code-137",
            "k8s-oomkilled",
            "torchrun-sigkill",
            "deepspeed-sigkill",
            "spawn-sigkill",
            "subprocess-sigkill",
            "exit-code-minus-9",
            "kernel-oom-kill",
            "ecs-oom-killed",
            "k8s-evicted-memory",
        ),
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
        superseded_by=(
            "shell-bus-error",
            "exit-code-135",
            "torchrun-sigbus",
            "deepspeed-sigbus",
            "caught-sigbus",
            "spawn-sigbus",
            "ray-sigbus",
            "ray-bus-error",
            "exit-code-minus-7",
            "subprocess-sigbus",
        ),
    ),
)
SIGNATURES = SIGNATURES + STATUSES

# The general reader's findings (reader.py): no text of their own, an errno or a signal of the family read with a
# shared-memory context in the same block; the consumer is the one the block names. Their ids end as the catalogue's
# do (-denied, -read-only, -enosys), so the fixes follow.
_READ = (
    "the general reader (diagnose/reader.py): the errno or signal on this line and the shared-memory context in its "
    "block"
)
READINGS: tuple[Signature, ...] = (
    Signature(
        "read-shm-enospc",
        "shm-space",
        "unknown",
        "",
        _NEVER,
        _READ,
        "a write or an allocation in shared memory failed with ENOSPC (No space left on device): /dev/shm is full",
    ),
    Signature(
        "read-shm-full",
        "shm-space",
        "unknown",
        "",
        _NEVER,
        "the general reader: df's line of /dev/shm at 95% used or more",
        "/dev/shm was full where it ran (df says so)",
    ),
    Signature(
        "read-shm-denied",
        "shm-missing",
        "unknown",
        "",
        _NEVER,
        _READ,
        "shared memory could not be created (EACCES, Permission denied): /dev/shm is not writable for this user",
    ),
    Signature(
        "read-shm-read-only",
        "shm-missing",
        "unknown",
        "",
        _NEVER,
        _READ,
        "shared memory could not be created (EROFS): /dev/shm is mounted read-only",
    ),
    Signature(
        "read-shm-enosys",
        "shm-missing",
        "unknown",
        "",
        _NEVER,
        _READ,
        "a semaphore or segment could not be created (ENOSYS, Function not implemented): there is no /dev/shm "
        "mounted (AWS Lambda, a chroot, an old container)",
    ),
    Signature(
        "read-shm-enoent",
        "shm-missing",
        "unknown",
        "",
        _NEVER,
        _READ,
        "a semaphore could not be created (ENOENT): there is no /dev/shm to create it in",
    ),
    Signature(
        "read-shm-emfile",
        "fd-limit",
        "unknown",
        "",
        _NEVER,
        _READ,
        "shared memory could not be opened (EMFILE, Too many open files): the process ran out of file descriptors",
    ),
    Signature(
        "read-shm-enomem",
        "memory-limit",
        "unknown",
        "",
        _NEVER,
        _READ,
        "shared memory could not be had (ENOMEM, Cannot allocate memory): the memory its pages are charged to (a "
        "memory limit, which /dev/shm counts toward) or the kernel's limit on mappings ran out",
        ambiguous=True,
    ),
    Signature(
        "read-shm-bus-error",
        "shm-space",
        "unknown",
        "",
        _NEVER,
        _READ,
        "a process died of a bus error in shared memory: a page of /dev/shm it mapped could not be had",
        ambiguous=True,
    ),
    Signature(
        "read-shm-crash",
        "shm-space",
        "unknown",
        "",
        _NEVER,
        "the general reader: a crash (SIGSEGV) inside a shared-memory call of its block (ncclShmOpen, shm_open)",
        "a process crashed inside a shared-memory call: the segment it mapped could not be had",
        ambiguous=True,
    ),
    Signature(
        "read-browser-crash",
        "shm-space",
        "chromium",
        "",
        _NEVER,
        "the general reader: a crash said within 3 lines of a browser of the Chromium family's name",
        "a browser tab or renderer crashed: in a container, most often its /dev/shm (64 MiB) ran out",
        ambiguous=True,
    ),
)
BY_ID = {s.id: s for s in SIGNATURES + READINGS}
SHM_CAUSES = frozenset(CAUSES) - {"not-shm", "ambiguous"}
