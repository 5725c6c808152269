"""What a log says of the job besides its failure: how many GPUs of one host it ran (NCCL's own count, the device
index in NCCL's line prefix, torchrun's lines) and NCCL's channels; in the kernel's OOM report, the memory
cgroup's limit that was hit and the tmpfs (/dev/shm) pages in it; and where it ran, as far as the text says it: the
size of its /dev/shm (a df or mount line, a --shm-size or shm_size in a pasted command or file, an inspect's
ShmSize), a memory limit given to it, and the form it was defined in (docker run, compose, kubectl / helm, a pod's
log prefix). The need of NCCL is computed from these; each
clue keeps the line that gave it, so the report can say where the number comes from. Pure: no I/O.
Every pattern is linear (bounded repetitions only, as the catalogue's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import UsageError
from ..limits import MAX_BYTES
from ..model import Form
from ..sizes import parse_quantity, parse_size

NUM = 6  # digits of a count
# NCCL ≥ 2.19 at init: 'comm 0x… rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0'
_LOCAL_RANKS = re.compile(rf"\blocalRanks ([0-9]{{1,{NUM}}})\b")
# NCCL before: 'comm 0x7ff1ec001060 rank 0 nranks 2 cudaDev 0 busId 100000 - Init COMPLETE' (one host assumed)
_NRANKS = re.compile(rf"\bn[Rr]anks ([0-9]{{1,{NUM}}})\b(?! nNodes (?:[2-9]|[0-9]{{2}}))")
# NCCL's line prefix 'host:pid:tid [dev]' (or '[dev]' alone): the CUDA device of the process, one a local rank
_DEVICE = re.compile(rf"^(?:\[[^\]]{{1,40}}\] )?(?:\S{{1,255}}:[0-9]{{1,20}}:[0-9]{{1,20}} )?\[([0-9]{{1,{NUM}}})\] ")
# NCCL: '2 coll channels, 2 p2p channels, 2 p2p channels per peer'
_CHANNELS = re.compile(rf"\b([0-9]{{1,{NUM}}}) coll channels\b")
MAX_CHANNELS = 64  # NCCL's MAXCHANNELS (src/include/device.h; 32 in older releases): more is not NCCL's count
# torchrun: '--nproc-per-node 4', '--nproc_per_node=4'; its failure report: 'local_rank: 7'
_NPROC = re.compile(rf"--nproc[-_]per[-_]node[= ]([0-9]{{1,{NUM}}})\b")
_LOCAL_RANK = re.compile(rf"\blocal_rank: ([0-9]{{1,{NUM}}})\b")
# A server's or a launcher's GPUs in a pasted command or config (issue 35 item 4): vLLM's --tensor-parallel-size / -tp,
# SGLang's --tp-size, tensor_parallel_size=, world_size / WORLD_SIZE (one host assumed: more is the safe side), docker
# run --gpus N, a pod's nvidia.com/gpu: N and requestGPU: N
_GPUS = re.compile(
    rf"(?:--tensor[-_]parallel[-_]size|(?<![\w-])--?tp(?:[-_]size)?|\btensor_parallel_size|\b(?:world_size|WORLD_SIZE)"
    rf"|--gpus|\bnvidia\.com/gpu|\brequestGPU)['\"]?\s{{0,4}}[=: ]\s{{0,4}}['\"]?([0-9]{{1,{NUM}}})\b"
)
# CUDA_VISIBLE_DEVICES=0,1,2: the devices listed
_VISIBLE = re.compile(r"\bCUDA_VISIBLE_DEVICES=['\"]?([0-9]{1,6}(?:,[0-9]{1,6}){0,4095})\b")

# The kernel's OOM report (mm/memcontrol.c): 'memory: usage 65536kB, limit 65536kB, failcnt 0', then the cgroup's
# stats, 'shmem 65458176' (bytes of tmpfs pages, /dev/shm's; cgroup v1 adds 'total_shmem' for the hierarchy)
BYTES = 20  # digits of a byte count
_MEMCG = re.compile(rf"\bmemory: usage [0-9]{{1,{BYTES}}}kB, limit ([0-9]{{1,{BYTES}}})kB")
_SHMEM = re.compile(rf"^(?:\[[ 0-9.]{{1,{BYTES}}}\] )?(?:total_)?shmem ([0-9]{{1,{BYTES}}})\s{{0,{BYTES}}}$")
# A limit above 1 PiB (limits.MAX_BYTES) was not hit: more memory than any machine has (cgroup v1's 'no limit',
# 9007199254740988kB, among them); a limit of 0 is read as none where it is used (judge)

# Where it ran. df's line for /dev/shm: 'shm  64M  0  64M  0% /dev/shm' (-h: binary units) or in 1K-blocks
SIZE = rf"[0-9]{{1,{BYTES}}}(?:\.[0-9]{{1,4}})?"
_DF = re.compile(
    rf"^\S{{1,255}}\s{{1,40}}(?P<size>{SIZE})(?P<unit>[KMGTP]?)i?\s{{1,40}}\S{{1,40}}\s{{1,40}}\S{{1,40}}\s{{1,40}}"
    r"[0-9]{1,3}%\s{1,40}/dev/shm\s{0,40}$"
)
# mount's and /proc/mounts' line: 'shm on /dev/shm type tmpfs (rw,…,size=65536k)', 'shm /dev/shm tmpfs rw,size=65536k'
_MOUNT = re.compile(rf"\s/dev/shm (?:type )?tmpfs [^\s]{{0,255}}\bsize=(?P<size>[0-9]{{1,{BYTES}}}[kmgKMG]?)\b")
# A pasted command: 'docker run … --shm-size=2g …', its memory limit '--memory 2g' / '-m 2g'
_RUN = re.compile(r"\b(?P<engine>docker|podman|nerdctl)(?: container)? (?:run|create)\b")
_RUN_SHM = re.compile(rf" --shm-size[= ]['\"]?(?P<size>{SIZE}[a-zA-Z]{{0,3}})\b")
_RUN_MEMORY = re.compile(rf" (?:--memory|-m)[= ]['\"]?(?P<size>{SIZE}[a-zA-Z]{{0,3}})\b")
# compose: 'shm_size: 2gb', 'mem_limit: 4g'; an inspect's '"ShmSize": 67108864'
_COMPOSE_SHM = re.compile(rf"^\s{{0,40}}shm_size:\s{{0,40}}['\"]?(?P<size>{SIZE}[a-zA-Z]{{0,3}})['\"]?\s{{0,40}}$")
_COMPOSE_MEMORY = re.compile(rf"^\s{{0,40}}mem_limit:\s{{0,40}}['\"]?(?P<size>{SIZE}[a-zA-Z]{{0,3}})['\"]?\s{{0,40}}$")
_INSPECT_SHM = re.compile(rf'"ShmSize":\s{{0,40}}(?P<size>[0-9]{{1,{BYTES}}})\b')
# Kubernetes: a kubectl or helm command, and a container's 'limits:' then 'memory: 2Gi' within a few lines
_KUBE = re.compile(
    r"\b(?:kubectl|helm)\s(?:\S{1,40}\s)?(?:logs|describe|get|install|upgrade|apply|exec|run|template)\b"
    r"|\b[Hh]elm chart"
)
_LIMITS = re.compile(r"^\s{0,80}limits:\s{0,40}$")
_K8S_MEMORY = re.compile(r"^\s{0,80}memory:\s{0,40}['\"]?(?P<q>[0-9.]{1,40}[a-zA-Z]{0,2})['\"]?\s{0,40}$")
LIMITS_REACH = 4  # lines from 'limits:' to its 'memory:'
# The kubelet's eviction of a pod over an emptyDir's sizeLimit, the volume named as /dev/shm's are ('dshm'): the
# sizeLimit is its /dev/shm, the form Kubernetes
EMPTYDIR_EVICTED = re.compile(
    r'Usage of EmptyDir volume "(?:dshm|shm|dev-shm|devshm|shared-memory|shm-volume)" exceeds the limit '
    r'"(?P<q>[0-9]{1,20}(?:\.[0-9]{1,4})?[KMGTPE]i?)"'
)

# PostgreSQL's settings that bound a parallel hash join's shared table (nodeHash.c): in a SET, a postgresql.conf or
# YAML line, a `postgres -c` ('SET work_mem = '256MB'', 'work_mem: 1GB', '-c work_mem=65536' in kB), and the
# workers of a Gather (its setting, or EXPLAIN ANALYZE's 'Workers Launched: 4'); not maintenance_work_mem's
_PG_SET = r"['\"]?\s{0,4}(?:=|:|\s[Tt][Oo]\s)\s{0,4}['\"]?"
_WORK_MEM = re.compile(rf"(?<![\w.])work_mem{_PG_SET}(?P<n>[0-9]{{1,12}})\s{{0,2}}(?P<unit>(?i:[kmgt]?b))?\b")
_HASH_MEM = re.compile(rf"(?<![\w.])hash_mem_multiplier{_PG_SET}(?P<x>[0-9]{{1,4}}(?:\.[0-9]{{1,6}})?)\b")
_PG_WORKERS = re.compile(
    rf"(?:(?<![\w.])max_parallel_workers_per_gather{_PG_SET}|\bWorkers (?:Launched|Planned): )(?P<n>[0-9]{{1,{NUM}}})\b"
)
PG_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}  # its memory units; none: kB
PG_MAX_MULTIPLIER = 1000.0  # hash_mem_multiplier's maximum (guc_tables.c)
PG_MAX_WORKERS = 1024  # max_parallel_workers_per_gather's maximum (MAX_PARALLEL_WORKER_LIMIT)

# A DataLoader's settings in a printed command line or config dump (issue 35 item 4): '--batch-size 64', 'batch_size=64'
# (argparse's Namespace, a dict), HF's 'per_device_train_batch_size', mmcv's 'samples_per_gpu=2'; '--workers 8',
# 'num_workers: 8', HF's 'dataloader_num_workers', mmcv's 'workers_per_gpu'; not an eval batch or PostgreSQL's workers
_LOADER_SET = r"['\"]?\s{0,4}[=: ]\s{0,4}['\"]?(?P<n>[0-9]{1,7})\b"
_BATCH = re.compile(
    rf"(?<![\w-])(?:--)?(?:(?:per[-_]device[-_])?(?:train[-_])?batch[-_]size|samples_per_gpu){_LOADER_SET}"
)
_WORKERS = re.compile(rf"(?<![\w-])(?:--)?(?:(?:dataloader[-_])?num[-_]workers|workers(?:_per_gpu)?){_LOADER_SET}")
MAX_BATCH = 10**7  # PyTorch accepts any; more samples than this in one batch is not a setting

# shmdoctor run's own lines in a pasted log (render/run.py): its facts line ('shmdoctor run: /dev/shm 64 MiB, 0 B
# used: …; IPC private; memory limit 2 GiB; …'), the loaders' need it computed ('the loaders' need 900 MiB (…') and
# how the command ended ('shmdoctor run: python train.py exited 135 (SIGBUS) after 4.2 s; …')
RUN = "shmdoctor run:"
_UNIT = r"(?:[KMGTPE]iB|B)"
_OURS_SHM = re.compile(rf"^shmdoctor run: /dev/shm (?P<size>{SIZE}) (?P<unit>{_UNIT}), ")
_OURS_MEMORY = re.compile(rf"; memory limit (?P<size>{SIZE}) (?P<unit>{_UNIT});")
_OURS_NEED = re.compile(rf"; the loaders' need (?P<size>{SIZE}) (?P<unit>{_UNIT}) \(")
_OURS_EXIT = re.compile(r"^shmdoctor run: .{1,4000}? exited (?P<code>[0-9]{1,3})(?: \(SIG[A-Z]{2,8}\))? after ")

ANCHORS = (
    RUN,
    "tensor-parallel-size",
    "tensor_parallel_size",
    "-tp",
    "world_size",
    "WORLD_SIZE",
    "--gpus",
    "nvidia.com/gpu",
    "requestGPU",
    "CUDA_VISIBLE_DEVICES",
    "nranks",
    "nRanks",
    "localRanks",
    "coll channels",
    "nproc",
    "local_rank",
    "memory: usage",
    "shmem ",
    "/dev/shm",
    "--shm-size",
    "docker run",
    "podman run",
    "nerdctl run",
    "container run",
    "docker create",
    "shm_size",
    "ShmSize",
    "mem_limit",
    "kubectl",
    "helm",
    "Helm chart",
    "Usage of EmptyDir volume",
    "limits:",
    "memory:",
    "work_mem",
    "hash_mem_multiplier",
    "max_parallel_workers_per_gather",
    "Workers Launched",
    "Workers Planned",
    "batch_size",
    "batch-size",
    "samples_per_gpu",
    "workers",
)
MAX_RANKS = 4096  # more local GPUs than any host has: not a count


@dataclass
class Clues:
    ranks: int | None = None  # GPUs of one host the job ran, the most any line says
    ranks_from: str = ""  # what said it, for the report
    channels: int | None = None  # NCCL's collective channels
    memory_limit: int | None = None  # bytes: the memory cgroup's limit the kernel's OOM report says was hit
    shmem: int | None = None  # bytes of tmpfs pages (/dev/shm) in that cgroup at the kill, the most said
    shm_size: int | None = None  # the /dev/shm where it ran, as the text says it (the last said)
    shm_size_from: str = ""
    form: Form | None = None  # where it was defined: docker, podman, compose, kubernetes
    form_from: str = ""
    memory_said: int | None = None  # a memory limit the text gives it (a pasted command or manifest)
    memory_said_from: str = ""
    need_said: int | None = None  # bytes: the loaders' need shmdoctor run computed and printed
    need_said_from: str = ""
    exit_code: int | None = None  # how the command ended, as shmdoctor run printed it (128+N for a signal)
    exit_from: str = ""
    work_mem: int | None = None  # bytes: PostgreSQL's work_mem as the text sets it, the most said
    hash_mem_multiplier: float | None = None  # and its hash_mem_multiplier, the most said
    pg_workers: int | None = None  # and the parallel workers of a Gather, the most said
    pg_said: dict[str, str] = field(default_factory=dict)  # each of them: the line that said it
    batch_size: int | None = None  # a DataLoader's batch and workers, as a pasted command or config gives them
    num_workers: int | None = None
    loader_said: dict[str, str] = field(default_factory=dict)  # each of them: the line that said it
    _limits_at: int | None = None  # the last 'limits:' line's number, for its 'memory:'

    def line(self, text: str, number: int = 0) -> None:
        for pattern, at_least, what in (
            (_LOCAL_RANKS, 0, "NCCL's localRanks"),
            (_NRANKS, 0, "NCCL's nranks"),
            (_NPROC, 0, "torchrun's --nproc-per-node"),
            (_LOCAL_RANK, 1, "torchrun's local_rank"),
            (_GPUS, 0, "the GPUs its command or config gives"),
        ):
            m = pattern.search(text)
            if m:
                self._ranks(int(m.group(1)) + at_least, what)
        m = _VISIBLE.search(text)
        if m:
            self._ranks(m.group(1).count(",") + 1, "CUDA_VISIBLE_DEVICES")
        if "NCCL" in text:
            m = _DEVICE.match(text)
            if m:
                self._ranks(int(m.group(1)) + 1, "the device in NCCL's line prefix")
        m = _CHANNELS.search(text)
        if m and int(m.group(1)) <= MAX_CHANNELS:
            self.channels = max(self.channels or 0, int(m.group(1)))
        m = _MEMCG.search(text)
        if m and int(m.group(1)) * 1024 <= MAX_BYTES:
            self.memory_limit = int(m.group(1)) * 1024
        m = _SHMEM.match(text)
        if m and int(m.group(1)) <= MAX_BYTES:
            self.shmem = max(self.shmem or 0, int(m.group(1)))
        if "_mem" in text or "orkers" in text:
            self._postgres(text, number)
        if "atch" in text or "orkers" in text or "per_gpu" in text:
            self._loader(text, number)
        self._place(text, number)

    def _postgres(self, text: str, number: int) -> None:
        """PostgreSQL's settings that bound a parallel hash join's shared memory, the most each is said to be."""
        m = _WORK_MEM.search(text)
        size = int(m.group("n")) * PG_UNITS[(m.group("unit") or "kB").lower()] if m else 0
        if 0 < size <= MAX_BYTES and size > (self.work_mem or 0):
            self.work_mem, self.pg_said["work_mem"] = size, f"line {number}"
        m = _HASH_MEM.search(text)
        x = float(m.group("x")) if m else 0.0
        if 0 < x <= PG_MAX_MULTIPLIER and x > (self.hash_mem_multiplier or 0):
            self.hash_mem_multiplier, self.pg_said["hash_mem_multiplier"] = x, f"line {number}"
        m = _PG_WORKERS.search(text)
        n = int(m.group("n")) if m else 0
        if 0 < n <= PG_MAX_WORKERS and n > (self.pg_workers or 0):
            self.pg_workers, self.pg_said["workers"] = n, f"line {number}"

    def _loader(self, text: str, number: int) -> None:
        """A DataLoader's batch and workers, the most each is said to be (train and eval: the bigger need)."""
        for pattern, name, least in ((_BATCH, "batch_size", 1), (_WORKERS, "num_workers", 0)):
            m = pattern.search(text)
            n = int(m.group("n")) if m else -1
            if least <= n <= MAX_BATCH and n > (getattr(self, name) if getattr(self, name) is not None else -1):
                setattr(self, name, n)
                self.loader_said[name] = f"line {number}"

    def _run(self, text: str, number: int) -> None:
        """shmdoctor run's own lines: the place it measured, the loaders' need, how the command ended."""
        m = _OURS_SHM.match(text)
        if m:
            self._shm(_size(m.group("size") + m.group("unit")), f"shmdoctor run's facts, line {number}")
        m = _OURS_MEMORY.search(text)
        if m:
            self._memory(_size(m.group("size") + m.group("unit")), f"shmdoctor run's facts, line {number}")
        m = _OURS_NEED.search(text)
        if m:
            self.need_said = _size(m.group("size") + m.group("unit"))
            self.need_said_from = f"the loaders' need shmdoctor run printed, line {number}"
        m = _OURS_EXIT.match(text)
        if m:
            self.exit_code, self.exit_from = int(m.group("code")), f"shmdoctor run, line {number}"

    def _place(self, text: str, number: int) -> None:
        """Where it ran: its /dev/shm's size, its memory limit and its form, each as the text says it."""
        if text.startswith(RUN):
            self._run(text, number)
        m = _DF.match(text)
        if m:  # df -h prints binary units (64M: 64 MiB); without one, 1K-blocks
            self._shm(_size(m.group("size") + (m.group("unit") or "k")), f"df, line {number}")
        m = _MOUNT.search(text)
        if m:
            self._shm(_size(m.group("size")), f"the mount of /dev/shm, line {number}")
        run = _RUN.search(text)
        if run:
            engine = run.group("engine")
            self._form("podman" if engine == "podman" else "docker", f"{engine} run, line {number}")
            m = _RUN_SHM.search(text, run.end())
            if m:
                self._shm(_size(m.group("size")), f"{engine} run --shm-size, line {number}")
            m = _RUN_MEMORY.search(text, run.end())
            if m:
                self._memory(_size(m.group("size")), f"{engine} run --memory, line {number}")
        m = _COMPOSE_SHM.match(text)
        if m:
            self._form("compose", f"shm_size, line {number}")
            self._shm(_size(m.group("size")), f"shm_size, line {number}")
        m = _COMPOSE_MEMORY.match(text)
        if m:
            self._memory(_size(m.group("size")), f"mem_limit, line {number}")
        m = _INSPECT_SHM.search(text)
        if m:
            self._shm(_size(m.group("size")), f"ShmSize, line {number}")
        if _KUBE.search(text):
            self._form("kubernetes", f"kubectl / helm, line {number}")
        m = EMPTYDIR_EVICTED.search(text)
        if m:
            self._shm(_quantity(m.group("q")), f"the kubelet's eviction (its emptyDir's sizeLimit), line {number}")
            self._form("kubernetes", f"the kubelet's eviction, line {number}")
        if _LIMITS.match(text):
            self._limits_at = number
        elif self._limits_at is not None and 0 < number - self._limits_at <= LIMITS_REACH:
            m = _K8S_MEMORY.match(text)
            if m:
                self._memory(_quantity(m.group("q")), f"limits: memory:, line {number}")
                self._form("kubernetes", f"limits: memory:, line {number}")

    def settled(self, text: str, number: int) -> bool:
        """The same text on each line from `number` on says what it says on the last of them alone: no 'limits:'
        line just before gives its 'memory:' a meaning that later lines lose."""
        reach = self._limits_at is not None and 0 < number - self._limits_at <= LIMITS_REACH
        return not reach or bool(_LIMITS.match(text))

    def pod_log(self, number: int) -> None:
        """A line in the form of a pod's log file (containerd's, CRI-O's): the job ran in a Kubernetes pod."""
        self._form("kubernetes", f"a pod's log prefix, line {number}")

    def _shm(self, size: int | None, what: str) -> None:
        if size:  # 0 (a df of an empty line) or unreadable: not a size
            self.shm_size, self.shm_size_from = size, what

    def _memory(self, size: int | None, what: str) -> None:
        if size:
            self.memory_said, self.memory_said_from = size, what

    def _form(self, form: Form, what: str) -> None:
        if self.form is None or form == "kubernetes":  # a pod's is the one a docker run inside it does not change
            self.form, self.form_from = form, what

    def _ranks(self, n: int, what: str) -> None:
        if n <= MAX_RANKS and n > (self.ranks or 0):  # a count of 0 is none
            self.ranks, self.ranks_from = n, what


def _size(text: str) -> int | None:
    """A size as Docker reads it ('2g', '512m', '65536k', bytes); None where it is not one."""
    try:
        return parse_size(text)
    except UsageError:
        return None


def _quantity(text: str) -> int | None:
    try:
        return parse_quantity(text)
    except UsageError:
        return None
