"""The general reader: evidence, not sentences. An errno or a signal of the shared-memory family on a line (ENOSPC,
EACCES, EROFS, ENOSYS, EMFILE, ENOENT beside SemLock, ENOMEM, SIGBUS, a crash inside a shared-memory call, a browser
tab's crash) and a shared-memory context in the same block of the log (a /dev/shm path, shm_open, "shared memory", a
segment's name, a consumer's frame: within WINDOW lines either side) is read as that failure, where no known text of
the catalogue matched the line; a /dev/shm that df shows full is read as such. Who the consumer is comes from the
same block (a frame, a segment's name, its own words), also for a known text that does not say it (a bare OSError
beside SemLock's frames, UCX's bus error above NCCL's). A mapped file the block names (LMDB, np.memmap) and an errno
about a file elsewhere (a disk path on its own line) are read as nothing: they stay not recognised.

Fed the candidate lines in order by the Scanner (the literals of this module are in the same prefilter); bounded:
what was seen in the last WINDOW lines (at most KEPT contexts) and at most WAITING items waiting for the lines after
them are kept, whatever the log's size. Pure: no I/O. Every pattern is linear (bounded repetitions, as the
catalogue's)."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from .catalogue import Consumer

WINDOW = 30  # lines either side of a failure that are its block: a traceback, a backtrace, a paragraph
CRASH_REACH = 3  # lines either side of a browser's crash that name the browser
WAITING = 64  # failures held at once for the lines after them; more within WINDOW lines are a flood
KEPT = 256  # contexts kept from the last WINDOW lines
EVIDENCE = 3  # contexts said in a finding's evidence

# What a context proves: shm (shared memory itself: /dev/shm, "shared memory", a segment's name), call (a function of
# shared memory: shm_open, ncclShmOpen), semaphore (a POSIX semaphore: SemLock, sem_open), pool (a process pool that
# makes semaphores: multiprocessing, billiard, loky), frame (a consumer of /dev/shm: NCCL's frames, Ray, the
# DataLoader), name (a consumer's bare name: NCCL), place (a place without /dev/shm: AWS Lambda), mapped (another
# mapped file: LMDB, np.memmap), rebuild (a semaphore reopened by a child: the catalogue's remove-ipc), semlock
# (Python's SemLock, which creates its semaphore: ENOENT there is no /dev/shm), sysv (System V shared memory:
# shmget, SHMMAX, not /dev/shm), other (a call on the failure's own line that is not shared memory: ibv_*, socket),
# elsewhere (what puts a bus error or a crash of its consumer, or of anyone's where consumer is None, off /dev/shm: a
# flag that moves the consumer's files, a disk said full, PostgreSQL's main segment)
Kind = Literal[
    "shm",
    "call",
    "semaphore",
    "semlock",
    "pool",
    "frame",
    "name",
    "place",
    "mapped",
    "rebuild",
    "sysv",
    "other",
    "elsewhere",
    "pycall",
]


@dataclass(frozen=True)
class Context:
    what: str  # in words, for the evidence
    kind: Kind
    consumer: Consumer | None
    literals: tuple[str, ...]  # one of them is in every line it matches (the prefilter's and the first test)
    pattern: re.Pattern[str]
    why: str = ""  # elsewhere: why a failure in its block is not /dev/shm's


# In the order a consumer is preferred where several are named in one block (a pool before the SemLock it made)
CONTEXTS: tuple[Context, ...] = (
    Context("NCCL's shared-memory call", "call", "nccl", ("ncclShm",), re.compile(r"\bncclShm\w{0,40}")),
    Context(
        "NCCL's segment", "shm", "nccl", ("/dev/shm/nccl-", "nccl-shm-"), re.compile(r"/dev/shm/nccl-|\bnccl-shm-")
    ),
    Context(
        "NCCL's frame",
        "frame",
        "nccl",
        ("ncclGroupEnd", "ncclProxy", "ncclCommInit", "ncclTransport", "libnccl"),
        re.compile(r"\bnccl(?:GroupEnd|Proxy|CommInit|Transport)\w{0,40}|\blibnccl\b"),
    ),
    Context("vLLM", "frame", "vllm", ("vllm", "vLLM", "EngineCore"), re.compile(r"\bv(?:llm|LLM)\b|EngineCore")),
    Context(
        "SGLang",
        "frame",
        "sglang",
        ("sglang", "SGLang", "sgl_shm", "scheduler died during initialization"),
        # and its engine's word of a scheduler process that died (engine.py _scheduler_died_error: 'Rank 0 scheduler
        # died during initialization (exit code: -7)')
        re.compile(r"\bs(?:glang|GLang)\b|sgl_shm|\bRank [0-9]{1,6} scheduler died during initialization\b"),
    ),
    Context(
        "Ray's object store",
        "frame",
        "ray",
        # not 'plasma' alone: Arrow's plasma store runs under others (Mars)
        ("raylet", "ray/", "object store", "object_store"),
        re.compile(r"\braylet\b|\bray/|\bobject[ _]store"),
    ),
    Context(
        "Mars (its workers' storage is shared memory)",
        "frame",
        None,
        ("Mars ", "mars.", "mars/"),
        re.compile(
            r"\bMars (?:workers?|supervisors?|schedulers?|cluster)\b"
            r"|\bmars[./](?:worker|services|storage|deploy|oscar|serialization)\b"
        ),
    ),
    Context(
        "UCX's shared-memory transport",
        "call",
        None,
        ("uct_mm_", "mm_iface", "mm_posix", "uct_posix"),
        re.compile(r"\buct_mm_\w|\bmm_iface\b|\bmm_posix\b|\buct_posix"),
    ),
    Context(
        "Triton's server",
        "frame",
        "triton",
        ("tritonserver", "triton_python_backend", "python_backend", "riton server", "riton Server", "riton Inference"),
        re.compile(r"tritonserver|triton_python_backend|python_backend|[Tt]riton (?:[Ss]erver|Inference)"),
    ),
    Context(
        "PostgreSQL's segment",
        "shm",
        "postgresql",
        ("/PostgreSQL.", "shared memory segment"),
        # dsm_impl.c's words: a segment resized or opened is the dynamic one, in /dev/shm
        re.compile(r"/PostgreSQL\.|could not (?:resize|open) shared memory segment"),
    ),
    Context(
        "PostgreSQL",
        "frame",
        "postgresql",
        ("postgresql", "PostgreSQL", "Postgres", "SQLSTATE"),
        re.compile(r"\b(?:postgresql|Postgres(?:QL)?|PostgreSQL)\b|SQLSTATE"),
    ),
    Context(
        "PostgreSQL's postmaster on a child's signal",
        "frame",
        "postgresql",
        ("was terminated by signal",),
        # postmaster.c LogChildExit: 'server process (PID 42) was terminated by signal 7: Bus error', a background
        # worker's; initdb's and pg_ctl's wait_result_to_str: 'child process was terminated by signal 7: Bus error'
        re.compile(
            r'(?:server process|worker "[^"]{1,80}") \(PID [0-9]{1,10}\) was terminated by signal'
            r"|child process was terminated by signal"
        ),
    ),
    Context(
        "a browser of the Chromium family",
        "frame",
        "chromium",
        (
            *("chrom", "Chrom", "CHROM", "puppeteer", "Puppeteer", "playwright", "Playwright", "selenium"),
            *("Selenium", "cypress", "Cypress", "renderer", "Renderer", "targetCrashed"),
        ),
        # a name, not a folder of a path (Firefox's ipc/chromium/src)
        re.compile(
            r"(?i:(?<![/\w])(?:chrom(?:e|ium|edriver)|puppeteer|playwright|selenium|cypress|renderer)\b(?!/)"
            r"|targetCrashed)"
        ),
    ),
    Context(
        "Chromium's own log line",
        "frame",
        "chromium",
        ("ERROR:", "FATAL:", "WARNING:", "Received signal "),
        # '[494:502:0131/235140.848732:FATAL:memory.cc(22)]'; its signal handler: 'Received signal 7 BUS_ADRERR'
        re.compile(
            r"(?:^|[`'\"\s])\[[0-9]{1,10}:[0-9]{1,10}:[0-9]{4}/[0-9]{6}\.[0-9]{3,6}:"
            r"(?:ERROR|FATAL|WARNING|INFO|VERBOSE[0-9]):"
            r"|Received signal [0-9]{1,2} [A-Z]{3,4}_[A-Z]{3,8}\b"
        ),
    ),
    Context(
        "PyTorch's shared tensor",
        "shm",
        "dataloader",
        ("torch_",),
        re.compile(r"(?:<|/)torch_[0-9]{1,20}_"),
    ),
    Context(
        "PyTorch's DataLoader",
        "frame",
        "dataloader",
        ("DataLoader", "dataloader", "utils/data", "utils.data", "(shm)"),
        re.compile(r"DataLoader|dataloader|torch[/.]utils[/.]data|insufficient shared mem\w{0,4} \(shm\)"),
    ),
    Context(
        "prometheus_client's multiprocess files",
        "frame",
        "prometheus-client",
        ("prometheus_client", "PROMETHEUS_MULTIPROC", "prometheus_multiproc", "rometheus multiprocess", ".db"),
        # and its files: counter_<pid>.db, gauge_livesum_<pid>.db, histogram_<pid>.db (values.py)
        re.compile(
            r"prometheus_client|PROMETHEUS_MULTIPROC|prometheus_multiproc|[Pp]rometheus multiprocess"
            r"|/(?:counter|histogram|summary|gauge_[a-z]{3,10})_[0-9]{1,10}\.db\b"
        ),
    ),
    Context(
        "pandarallel's memory file system",
        "shm",
        "pandarallel",
        ("pandarallel",),
        # it passes data to its workers through files in /dev/shm (use_memory_fs, its default where /dev/shm is)
        re.compile(r"\bpandarallel\b"),
    ),
    Context(
        "Frigate (its camera frames are in /dev/shm)",
        "frame",
        "unknown",  # a consumer the schema has no value for, named before the pools of its threads' frames
        ("frigate", "Frigate"),
        # its docs ('Calculating required shm-size'): frames of each camera are kept in shared memory
        re.compile(r"/opt/frigate/|\bfrigate\.[a-z_]{1,40}\b|\bFrigate\b"),
    ),
    Context("Celery's pool", "pool", "celery", ("celery", "billiard"), re.compile(r"\bcelery\w{0,10}|\bbilliard\b")),
    Context("joblib's pool", "pool", "joblib", ("joblib", "loky"), re.compile(r"\b(?:joblib|loky)\b")),
    Context("TensorFlow", "frame", "tensorflow", ("tensorflow", "TensorFlow"), re.compile(r"\b[Tt]ensor[Ff]low\b")),
    Context(
        "JAX / XLA",
        "frame",
        "jax",
        ("jax", "xla_extension", "XLA"),
        re.compile(r"\bjax(?:lib)?\b|xla_extension|\bXLA\b"),
    ),
    Context("Python's SemLock", "semlock", "multiprocessing", ("SemLock",), re.compile(r"SemLock(?!\._rebuild)")),
    Context(
        "a POSIX semaphore",
        "semaphore",
        "multiprocessing",
        ("sem_open", "semaphore", "/sem."),
        re.compile(r"\bsem_open\b|\bsemaphore|/sem\.\S"),
    ),
    Context(
        "Python's multiprocessing",
        "pool",
        "multiprocessing",
        ("multiprocessing",),
        re.compile(r"(?<![\w.])(?<!torch/)(?<!elastic/)multiprocessing\b"),
    ),
    Context("NCCL", "name", "nccl", ("NCCL", "nccl"), re.compile(r"\b(?:NCCL|nccl)\b")),
    Context("/dev/shm", "shm", None, ("/dev/shm", "/run/shm"), re.compile(r"/(?:dev|run)/shm\b")),
    Context(
        "shared memory in words",
        "shm",
        None,
        ("shared mem", "Shared mem", "SHARED MEM", "shared_mem", "SharedMem", "共享内存"),
        re.compile(r"(?i:shared[ _]?mem(?:ory|ery)?)|共享内存"),
    ),
    Context("shm", "shm", None, ("shm", "SHM"), re.compile(r"(?<![\w/-])(?:shm|SHM)(?![\w-])")),
    Context("shm_open", "call", None, ("shm_open", "shm_unlink"), re.compile(r"\bshm_(?:open|unlink)\b")),
    Context("a Python SharedMemory segment", "shm", None, ("psm_",), re.compile(r"\bpsm_[0-9a-f]{8}\b")),
    Context(
        "AWS Lambda (no /dev/shm)",
        "place",
        None,
        ("AWS Lambda", "AWS lambda", "aws lambda", "/var/lang/", "/var/task/"),
        re.compile(r"(?i:aws lambda)|/var/(?:lang|task)/"),
    ),
    Context(
        "a memory-mapped file (LMDB, np.memmap)",
        "mapped",
        None,
        ("lmdb", "LMDB", "Lmdb", "memmap"),
        re.compile(r"(?i:\blmdb\b)|memmap"),
    ),
    Context(
        "an os call of Python",
        "pycall",
        None,
        ("os.",),
        # the call an errno came from, named in its block (os.symlink, os.sched_setaffinity): not SemLock's
        re.compile(r"(?<![\w.])os\.(?!environ|path|getenv|getcwd|getpid)[a-z_]{2,40}\("),
    ),
    Context("SemLock._rebuild", "rebuild", None, ("SemLock._rebuild",), re.compile(r"SemLock\._rebuild")),
    Context(
        "System V shared memory or huge pages (not /dev/shm)",
        "sysv",
        None,
        (
            *("shmget", "SHMMAX", "SHMMNI", "SHMALL", "System V", "SysV", "could not create shared memory segment"),
            *("huge_pages", "hugepages", "HugePages", "hugetlb", "PGSharedMemoryCreate"),
            "could not map anonymous shared memory",
        ),
        # and huge pages (hugetlbfs), PostgreSQL's main segment (anonymous or System V, pg_shmem.c): not /dev/shm either
        re.compile(
            r"\bshmget\b|\bSHM(?:MAX|MNI|ALL)\b|System V|SysV|could not create shared memory segment:"
            r"|huge_?pages|HugePages|hugetlb|PGSharedMemoryCreate|could not map anonymous shared memory"
        ),
    ),
    Context(
        "Chromium's --disable-dev-shm-usage",
        "elsewhere",
        "chromium",
        ("disable-dev-shm-usage",),
        # as given (an args list's quoted item, a command line beside another flag), not named in prose ('tried
        # adding `--disable-dev-shm-usage`', cypress-io/cypress#350, where it had not taken)
        re.compile(
            r"(?<=['\"])--disable-dev-shm-usage(?=['\"])"
            r"|--[\w-]{1,60}(?:=\S{0,200})? --disable-dev-shm-usage\b|--disable-dev-shm-usage --\w"
        ),
        # content_switches.cc kDisableDevShmUsage: 'a temporary directory will always be used to create anonymous
        # shared memory files'; Puppeteer's troubleshooting: args: ['--disable-dev-shm-usage']
        why="with it Chromium's shared-memory files are in /tmp, not /dev/shm: a crash then is /tmp's disk or the "
        "memory (`df -h /tmp` tells)",
    ),
    Context(
        "a disk said full",
        "elsewhere",
        None,
        ("disk space", "Disk space", "out of disk", "Out of disk", "disk is full", "disk was full", "disk full"),
        re.compile(
            r"(?i:(?:not enough|out of|low on|ran out of|run(?:ning)? out of|insufficient|lack of)(?: [\w-]{1,20}){0,2}"
            r" disk space|\bout of disk\b|\bdisk (?:is |was )?full\b)"
        ),
        why="a bus error or a crash of files on a full disk, not /dev/shm",
    ),
    Context(
        "initdb's start of the server",
        "elsewhere",
        "postgresql",
        ("shared_buffers ... 400kB", "--boot -x0", "running bootstrap script"),
        # initdb.c test_config_settings: trial_bufs end at 50 buffers (400kB), chosen only when every trial start of
        # the server failed; its trial start itself ('"postgres" --boot -x0 -F -c max_connections=…'); its bootstrap
        re.compile(
            r"selecting default shared_buffers \.\.\. 400kB\b|--boot -x0 (?:-F )?-c max_connections="
            r"|running bootstrap script \.\.\."
        ),
        why="a server initdb starts (its trial starts, its bootstrap) uses its main segment, not /dev/shm: a bus "
        "error there is huge pages the pod may not use (or System V): huge_pages = off, or give the pod the huge pages",
    ),
    Context(
        "another call (InfiniBand, a socket)",
        "other",
        None,
        ("ibv_", "NET/IB", "socket", "connect"),
        re.compile(r"\bibv_\w|NET/IB|\bsocket\b|\bconnect\("),
    ),
)

ALL: frozenset[Kind] = frozenset({"shm", "call", "semaphore", "semlock"})


@dataclass(frozen=True)
class Event:
    """A failure a line says, as a reading: its signature's id (catalogue.READINGS), the contexts that prove it in
    the same block, and whether a file elsewhere named on its own line makes it that file's."""

    id: str
    literals: tuple[str, ...]
    pattern: re.Pattern[str]
    proven_by: frozenset[Kind]
    own_path: bool = False  # a disk path on the line makes it that file's (a checkpoint's ENOSPC)
    mapped: bool = False  # a mapped file named in the block (LMDB, np.memmap) makes it that file's
    reach: int = WINDOW
    by_consumer: Consumer | None = None  # proven only by this consumer's name (a browser's crash)


def _errno(words: str, name: str, number: int) -> tuple[tuple[str, ...], re.Pattern[str]]:
    """strerror's words, the errno's name, Python's '[Errno N]' and 'OSError(N, …)'."""
    pattern = re.compile(rf"{words}|\b{name}\b|Errno {number}\b|Error\({number},")
    return (words.replace("[Nn]", "N"), words.replace("[Nn]", "n"), name, f"Errno {number}", f"Error({number},"), (
        pattern
    )


EVENTS: tuple[Event, ...] = (
    Event("read-shm-enospc", *_errno("[Nn]o space left on device", "ENOSPC", 28), ALL, own_path=True, mapped=True),
    Event("read-shm-denied", *_errno("Permission denied", "EACCES", 13), ALL, own_path=True),
    Event("read-shm-read-only", *_errno("Read-only file system", "EROFS", 30), ALL, own_path=True),
    # a security module's refusal (AppArmor's audit line, SELinux's AVC) of a file in /dev/shm: a permission
    Event(
        "read-shm-denied",
        ('apparmor="DENIED"', "avc:  denied", "avc: denied"),
        re.compile(r'apparmor="DENIED"|avc: {1,2}denied'),
        frozenset({"shm"}),
        own_path=True,
    ),
    Event(
        "read-shm-enosys",
        *_errno("Function not implemented", "ENOSYS", 38),
        frozenset({"shm", "call", "semaphore", "semlock", "pool", "place"}),
    ),
    Event("read-shm-emfile", *_errno("Too many open files", "EMFILE", 24), frozenset({"shm", "call"})),
    Event(
        "read-shm-enoent",
        *_errno("No such file or directory", "ENOENT", 2),
        frozenset({"semlock"}),
        own_path=True,
    ),
    # said on the line of a shared-memory call or path only: ENOMEM is any allocation's
    Event("read-shm-enomem", *_errno("Cannot allocate memory", "ENOMEM", 12), ALL, own_path=True, mapped=True, reach=0),
    Event(
        "read-shm-bus-error",
        ("SIGBUS", "Bus error", "bus error", "BUS error", "BUS ERROR", "signal 7", "BUS_ADRERR"),
        re.compile(r"\bSIGBUS\b|[Bb]us error|BUS (?:error|ERROR)|\bsignal 7\b|BUS_ADRERR"),
        frozenset({"shm", "call", "semaphore", "semlock", "frame"}),
        mapped=True,
    ),
    Event(
        "read-shm-crash",
        ("SIGSEGV", "egmentation fault", "segfault"),
        re.compile(r"\bSIGSEGV\b|[Ss]egmentation fault|\bsegfault"),
        frozenset({"call"}),
        mapped=True,
    ),
    Event(
        "read-browser-crash",
        ("crash", "Crash", "CRASH", "Aw, Snap", "Aw snap", "Aw, snap", ":FATAL:"),
        # and a fatal error in Chromium's own log
        # (a browser that failed to start is not one that crashed: ChromeDriver's 'failed to start: crashed' and
        # 'assuming that Chrome has crashed' say it never came up: a sandbox, a binary, a display)
        re.compile(
            r"(?<!failed to start: )(?<!assuming that Chrome has )(?i:crash)(?:ed|es|ing)?\b"
            r"(?!\s?(?:pad|report|handler|dump))|Aw,? [Ss]nap|:FATAL:"
        ),
        frozenset({"frame"}),
        reach=CRASH_REACH,
        by_consumer="chromium",
    ),
)
# Where an errno is about a file elsewhere: a path of two parts or more on its line, not under /dev/shm (a POSIX
# shared memory name is one part: '/PostgreSQL.1', '/loky-1-a')
_PATH = re.compile(r"(?<![\w/.:-])/(?:[\w.@+-]{1,255}/){1,40}[\w.@+-]{0,255}")
_SHM_PATH = re.compile(r"/(?:dev|run)/shm\b")
# A program's source file on the line says where it was said, not what failed (Firefox's shared_memory_posix.cc)
_SOURCE = re.compile(r"\.(?:c|cc|cpp|cxx|h|hpp|py|go|rs|java|js|ts)(?::[0-9]{1,10})?$")


def _elsewhere(path: str) -> bool:
    return not _SHM_PATH.match(path) and not _SOURCE.search(path)


# df's line of a /dev/shm this full (percent used), read as a full /dev/shm
FULL = 95
_DF_USE = re.compile(r"\s(?P<use>[0-9]{1,3})%\s{1,40}/dev/shm\s{0,40}$")
DF = Event("read-shm-full", ("/dev/shm",), _DF_USE, frozenset())
# The prefilter's literals: a call of another kind is looked for on a failure's own line only (socket, connect are
# common words)
_LOOKED_FOR = [c.literals for c in CONTEXTS if c.kind != "other"] + [e.literals for e in EVENTS]
ANCHORS: tuple[str, ...] = tuple(sorted({lit for literals in _LOOKED_FOR for lit in literals}))
# How a reading is said where a consumer of Python speaks: ENOSYS in Python's words is SemLock's (no /dev/shm)
_PYTHON_ERRNO = re.compile(r"Errno 38\b|Error\(38,")
# Python's OSError naming what it is about: "[Errno 38] Function not implemented: 'inotify_init'"
_ARGUMENT = re.compile(r"Function not implemented: ['\"]")


@dataclass
class Reading:
    """A failure a line says, waiting for the lines of its block after it: what it found so far."""

    event: Event
    line: int
    text: str
    seen: list[tuple[int, Context]] = field(default_factory=list)
    on_line: list[Context] = field(default_factory=list)
    python: bool = False  # said as Python says an errno ('[Errno 38]', 'OSError(38, …)')
    count: int = 1  # lines of the same failure in its block

    def add(self, number: int, context: Context) -> None:
        if number == self.line:
            self.on_line.append(context)
        reach = WINDOW if context.kind == "elsewhere" else self.event.reach
        if len(self.seen) < KEPT and abs(number - self.line) <= reach:
            self.seen.append((number, context))

    def proven(self) -> bool:
        kinds = {c.kind for _, c in self.seen}
        if "sysv" in kinds or any(c.kind == "other" for c in self.on_line):
            return False
        if "mapped" in kinds and self.event.mapped or "rebuild" in kinds and self.event.id == "read-shm-enoent":
            return False
        if self.event.by_consumer is not None:
            return any(c.consumer == self.event.by_consumer for _, c in self.seen)
        return not self.event.proven_by.isdisjoint(kinds) or self._semlocks_alone(kinds)

    def _semlocks_alone(self, kinds: set[Kind]) -> bool:
        """Python's ENOSYS with no call named: its line names no argument (the file or call of os.symlink's, of
        inotify_init's) and its block no os call: the one Python raises it from is SemLock, where no /dev/shm is."""
        return (
            self.event.id == "read-shm-enosys"
            and self.python
            and "pycall" not in kinds
            and not _ARGUMENT.search(self.text)
        )

    def consumer(self) -> Consumer:
        best = named_by([(self.line, c) for c in self.on_line]) or named_by(self.seen)
        if best is None and self.event.id == "read-shm-enosys" and self.python:
            return "multiprocessing"  # the one Python module that raises it there: SemLock, without /dev/shm
        if best is not None:
            return best[1].consumer or "unknown"
        return self.event.by_consumer or "unknown"

    def elsewhere(self, consumer: Consumer) -> tuple[int, Context] | None:
        """The nearest context of the block that puts a bus error or a crash of this consumer off /dev/shm; one of
        anyone's (a disk said full) only where the block does not say shared memory itself."""
        shm = any(c.kind == "shm" for _, c in self.seen)
        near = sorted(self.seen, key=lambda s: abs(s[0] - self.line))
        return next(
            (
                (n, c)
                for n, c in near
                if c.kind == "elsewhere" and (c.consumer == consumer or c.consumer is None and not shm)
            ),
            None,
        )

    def evidence(self) -> str:
        said: list[str] = []
        proof = self.event.proven_by
        for number, c in sorted(self.seen, key=lambda s: (s[1].kind not in proof, abs(s[0] - self.line), s[0])):
            if c.kind in ("mapped", "rebuild", "name", "sysv", "other", "elsewhere", "pycall"):
                continue
            if any(w.startswith(f"{c.what} (line ") for w in said):
                continue  # the nearest line of each context
            said.append(f"{c.what} (line {number})")
            if len(said) == EVIDENCE:
                break
        if not said and self.python:  # proven alone (_semlocks_alone)
            return "Python's errno 38 with no call named (SemLock's, where no /dev/shm is mounted)"
        return ", ".join(said)


def named_by(seen: list[tuple[int, Context]]) -> tuple[int, Context] | None:
    """The context that names the consumer: a frame, a segment or a pool before a bare name, then in CONTEXTS'
    order, then the nearest."""
    named = [(number, c) for number, c in seen if c.consumer is not None]
    if not named:
        return None
    return min(named, key=lambda s: (s[1].kind == "name", CONTEXTS.index(s[1])))


@dataclass
class Reader:
    """The contexts of the last WINDOW lines, and the failures (readings and known texts to name) waiting for the
    lines after them; what is done is kept as the first of each reading with its count."""

    _recent: deque[tuple[int, Context]] = field(default_factory=lambda: deque(maxlen=KEPT))
    _open: list[Reading] = field(default_factory=list)
    _done: list[Reading] = field(default_factory=list)  # the first proven reading of each id, counted in _counts
    _counts: dict[str, int] = field(default_factory=dict)
    _naming: dict[object, Reading] = field(default_factory=dict)  # a known text's key -> its block: who, and where
    _known_lines: deque[int] = field(default_factory=lambda: deque(maxlen=WAITING))

    def line(self, text: str, number: int, known: bool) -> None:
        """One candidate line; known: a text of the catalogue matched it (it is not read again here)."""
        self._close(number)
        found = [c for c in CONTEXTS if any(lit in text for lit in c.literals) and c.pattern.search(text)]
        if any(c.what == "/dev/shm" for c in found):
            found = self._df(text, number, found, known)
        for c in found:
            self._recent.append((number, c))
            for r in self._open:
                r.add(number, c)
        if known:
            return
        for event in EVENTS:
            if any(lit in text for lit in event.literals) and event.pattern.search(text):
                self._read(event, text, number)

    def reads(self, text: str) -> bool:
        """Whether a failure of its own is on the line (a df of /dev/shm counts as one)."""
        return _DF_USE.search(text) is not None or any(
            any(lit in text for lit in e.literals) and e.pattern.search(text) for e in EVENTS
        )

    def _df(self, text: str, number: int, found: list[Context], known: bool) -> list[Context]:
        """df's line of /dev/shm: full (FULL% or more used) is itself a reading; with room it is no context."""
        m = _DF_USE.search(text)
        if m is None:
            return found
        if int(m.group("use")) < FULL:
            return []  # df says /dev/shm had room
        if not known:
            self._read(DF, text, number)
        return found

    def _read(self, event: Event, text: str, number: int) -> None:
        if event.own_path and any(_elsewhere(p.group()) for p in _PATH.finditer(text)):
            return  # an errno about a file elsewhere: that file's
        if len(self._open) >= WAITING:
            return
        same = next((r for r in self._open if r.event is event and r.text), None)
        if same is not None:  # within the block of the same failure said before: that one, counted
            same.count += 1
            return
        r = Reading(event, number, text, python=bool(_PYTHON_ERRNO.search(text)))
        for seen, c in self._recent:
            r.add(seen, c)
        self._open.append(r)

    def name(self, key: object, number: int) -> None:
        """A known text at this line whose block may say who (its text does not) or where (a bus error, a crash)."""
        self.known(number)
        if key in self._naming or len(self._naming) >= WAITING:
            return
        r = Reading(DF, number, "")  # the block only: no event of its own
        for seen, c in self._recent:
            if number - seen <= WINDOW:
                r.add(seen, c)
        self._naming[key] = r
        self._open.append(r)

    def known(self, number: int) -> None:
        """A known text matched this line after it was read (one waiting for its context): not read here."""
        self._known_lines.append(number)
        self._open = [r for r in self._open if r.line != number or r.event is DF and r.text == ""]

    def _close(self, number: int) -> None:
        still = []
        for r in self._open:
            if number - r.line <= r.event.reach:
                still.append(r)
            elif r.text:  # a reading (not a block kept to name a known text)
                self._finish(r)
        self._open = still

    def _finish(self, r: Reading) -> None:
        if r.line in self._known_lines or not (r.event is DF or r.proven()):
            return
        if r.event.id not in self._counts:
            self._done.append(r)
        self._counts[r.event.id] = self._counts.get(r.event.id, 0) + r.count

    def readings(self) -> tuple[list[tuple[Reading, int]], dict[object, Reading]]:
        """The readings, first of each id with its count, and the block of each known text given to name(): as far
        as the log was read (what still waits for lines after it is judged on what came)."""
        done, counts = list(self._done), dict(self._counts)
        for r in self._open:
            if r.text and r.line not in self._known_lines and (r.event is DF or r.proven()):
                if r.event.id not in counts:
                    done.append(r)
                counts[r.event.id] = counts.get(r.event.id, 0) + r.count
        return [(r, counts[r.event.id]) for r in done], dict(self._naming)
