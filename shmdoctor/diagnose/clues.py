"""What a log says of the job besides its failure: how many GPUs of one host it ran (NCCL's own count, the device
index in NCCL's line prefix, torchrun's lines) and NCCL's channels; and, in the kernel's OOM report, the memory
cgroup's limit that was hit and the tmpfs (/dev/shm) pages in it. The need of NCCL is computed from these; each
clue keeps the line that gave it, so the report can say where the number comes from. Pure: no I/O.
Every pattern is linear (bounded repetitions only, as the catalogue's)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..limits import MAX_BYTES

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

# The kernel's OOM report (mm/memcontrol.c): 'memory: usage 65536kB, limit 65536kB, failcnt 0', then the cgroup's
# stats, 'shmem 65458176' (bytes of tmpfs pages, /dev/shm's; cgroup v1 adds 'total_shmem' for the hierarchy)
BYTES = 20  # digits of a byte count
_MEMCG = re.compile(rf"\bmemory: usage [0-9]{{1,{BYTES}}}kB, limit ([0-9]{{1,{BYTES}}})kB")
_SHMEM = re.compile(rf"^(?:\[[ 0-9.]{{1,{BYTES}}}\] )?(?:total_)?shmem ([0-9]{{1,{BYTES}}})\s{{0,{BYTES}}}$")
# A limit above 1 PiB (limits.MAX_BYTES) was not hit: more memory than any machine has (cgroup v1's 'no limit',
# 9007199254740988kB, among them); a limit of 0 is read as none where it is used (judge)

ANCHORS = ("nranks", "nRanks", "localRanks", "coll channels", "nproc", "local_rank", "memory: usage", "shmem ")
MAX_RANKS = 4096  # more local GPUs than any host has: not a count


@dataclass
class Clues:
    ranks: int | None = None  # GPUs of one host the job ran, the most any line says
    ranks_from: str = ""  # what said it, for the report
    channels: int | None = None  # NCCL's collective channels
    memory_limit: int | None = None  # bytes: the memory cgroup's limit the kernel's OOM report says was hit
    shmem: int | None = None  # bytes of tmpfs pages (/dev/shm) in that cgroup at the kill, the most said

    def line(self, text: str) -> None:
        for pattern, at_least, what in (
            (_LOCAL_RANKS, 0, "NCCL's localRanks"),
            (_NRANKS, 0, "NCCL's nranks"),
            (_NPROC, 0, "torchrun's --nproc-per-node"),
            (_LOCAL_RANK, 1, "torchrun's local_rank"),
        ):
            m = pattern.search(text)
            if m:
                self._ranks(int(m.group(1)) + at_least, what)
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

    def _ranks(self, n: int, what: str) -> None:
        if n <= MAX_RANKS and n > (self.ranks or 0):  # a count of 0 is none
            self.ranks, self.ranks_from = n, what
