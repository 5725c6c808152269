"""The fixes explain prescribes for each cause, in the target's own form, at the boundaries where the prescription
changes: a need equal to what is free here, a death at exactly the size computed, 16 GiB free, /dev/shm holding
exactly half the memory limit the kernel says was hit. Sizes are written here, with the arithmetic that makes them;
texts are quoted from real logs (tests/data/explain: the issue each comes from, or captured here)."""

from dataclasses import replace
from pathlib import Path

import pytest

from shmdoctor.diagnose import Exit, Measured, judge, scan_text
from shmdoctor.model import Facts, Ipc, Memory, Requirement, Shm, Target
from shmdoctor.sizes import GiB, MiB

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "explain" / "captured"
# vLLM 0.33 shm_broadcast.py (FACTS.md): the need is read from the text, 161 MiB
VLLM = (
    "RuntimeError: Insufficient space in /dev/shm for psm_1a2b3c4d: 161.0 MiB required, 60.2 MiB free. "
    "Increase /dev/shm (e.g. --shm-size or --ipc=host)."
)
ENOSPC = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"
BUS = "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error."
# the kernel's OOM report of dd filling /dev/shm under docker run --memory=64m --shm-size=256m (captured here)
KERNEL_OOM = (CAPTURED / "kernel-oom-shm-fill.log").read_text()
OOM_KILLED = Exit(137, True, "the engine (State.ExitCode)")
RESERVE = 256 * MiB  # the training process's own memory, a rank, beside /dev/shm


def container(shm: int | None, limit: int | None = None, used: int | None = 0) -> Facts:
    """A Docker container's facts as a probe inside it reads them: /dev/shm's size and use, the memory limit, no
    memory in use (so that the room the limit leaves is the limit less the process's reserve)."""
    free = None if shm is None or used is None else shm - used
    tmpfs = Shm(True, shm, used if shm is not None else None, free, "docker-shm")
    return Facts(Target("container", "job"), tmpfs, Ipc("private"), Memory(limit, 0), runtime="docker")


def machine(size: int, free: int) -> Facts:
    """A bare machine's own /dev/shm, no memory limit."""
    tmpfs = Shm(True, size, size - free, free, "system")
    return Facts(Target("local", "gpu-node"), tmpfs, Ipc("host"), Memory(None, 0), runtime="none")


def need_of(n: int) -> Requirement:
    """A need of exactly n bytes (the loader's settings given), one rank."""
    return Requirement(bytes=n, loader=None, batches_in_flight=0, breakdown=(), formula="")


def fixes_of(text: str, facts: Facts, **kw) -> list:
    log = scan_text(text)
    (finding,) = judge(log.diagnoses(), facts, clues=log.clues, **kw).report.findings
    return list(finding.fixes)


# -- shm-space: a need that fits here comes from a place with less ------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "fits"),
    [
        (RESERVE + 161 * MiB, True),  # the limit leaves exactly the 161 MiB vLLM asked: it fits here
        (RESERVE + 161 * MiB - 1, False),  # one byte less: it does not
    ],
)
def test_a_need_read_from_the_log_fits_here_at_exactly_the_room_the_memory_limit_leaves(limit, fits):
    """vLLM's 161 MiB in a 1 GiB /dev/shm under a memory limit: what is available is the limit less one rank's
    process (256 MiB). The size asked either way: 161 × 1.25 = 201.25 MiB, the series' next, 256 MiB."""
    log = scan_text(VLLM)
    (finding,) = judge(log.diagnoses(), container(GiB, limit)).report.findings
    grow, host = finding.fixes
    assert grow.shm_bytes == 256 * MiB
    if fits:
        assert finding.message.endswith(
            "needs ≥ 161 MiB, which fits the 161 MiB free here: the log comes from a place with less "
            "(run explain there, or with --container)"
        )
        assert grow.summary.startswith("give /dev/shm 256 MiB where it ran (docker/podman run --shm-size, ")
        assert grow.summary.endswith(": 161 MiB needed (read from the log) + 25%")
        assert (grow.memory_bytes, host.summary, host.ipc) == (None, "use the host's /dev/shm where it ran", "host")
    else:
        assert finding.message.endswith("(line 1); needs ≥ 161 MiB")
        # here: a /dev/shm and the memory to hold it, one rank's process + 201.25 MiB = 457.25 MiB -> 512 MiB
        assert grow.summary == "give /dev/shm 256 MiB: 161 MiB needed (read from the log) + 25%, and memory to hold it"
        assert (grow.memory_bytes, host.summary, host.ipc) == (512 * MiB, "use the host's /dev/shm", "host")


def test_a_need_given_that_fits_here_says_its_size_without_where_it_comes_from():
    """The loader's settings given (1 GiB): no evidence to name, 1 GiB × 1.25 -> 1.5 GiB where it ran."""
    grow, host = fixes_of(ENOSPC, machine(64 * GiB, 64 * GiB), need=need_of(GiB))
    assert grow.shm_bytes == 1536 * MiB and grow.summary.endswith(": 1 GiB + 25%") and host.ipc == "host"


# -- shm-space under run: never a size at or below the one it died in ---------------------------------------------


def died_in(size: int) -> Measured:
    return Measured(peak_bytes=size, size_bytes=size, peak_t=1.0, elapsed=2.0)


@pytest.mark.parametrize(
    ("need", "basis"),
    [
        (
            need_of(48 * MiB),
            "more than the 64 MiB it died in (the 48 MiB computed fit there: something else took the rest)",
        ),
        # a need equal to the size fit there, as check judges a need equal to what is free
        (
            need_of(64 * MiB),
            "more than the 64 MiB it died in (the 64 MiB computed fit there: something else took the rest)",
        ),
    ],
)
def test_a_death_in_a_dev_shm_the_need_fit_in_asks_more_than_it_and_says_why(need, basis):
    """64 MiB × 1.25 = 80 MiB -> 96 MiB; the memory to hold it: the process's 256 MiB + 80 MiB = 336 MiB -> 384 MiB
    above the 300 MiB limit (one rank: no loader says more)."""
    grow, host = fixes_of(ENOSPC, container(64 * MiB, 300 * MiB), measured=died_in(64 * MiB), need=need)
    assert grow.summary == f"give /dev/shm 96 MiB: {basis} + 25%, and memory to hold it"
    assert (grow.shm_bytes, grow.memory_bytes, host.ipc) == (96 * MiB, 384 * MiB, "host")


def test_a_death_with_a_need_over_the_size_it_died_in_asks_for_the_need():
    """65 MiB needed, died in 64 MiB: 65 × 1.25 = 81.25 MiB -> 96 MiB, said as the need."""
    grow, _ = fixes_of(ENOSPC, container(64 * MiB), measured=died_in(64 * MiB), need=need_of(65 * MiB))
    assert grow.summary == "give /dev/shm 96 MiB: 65 MiB needed + 25%" and grow.shm_bytes == 96 * MiB


# -- shm-space with no number: the one thing to know, never more than it had + 25% (issue 35 item 5) -------------


@pytest.mark.parametrize("free", [16 * GiB, 16 * GiB - 4096, 0])
def test_a_text_with_no_number_asks_the_one_thing_to_know_whatever_was_free(free):
    """Before, below 16 GiB free it grew what it had by 25% (16 GiB + a page -> 24 GiB; a 64 MiB container -> 96
    MiB, which dies again): a guess presented as the fix. Now the loader's settings, or run, give the number."""
    ask, host = fixes_of(ENOSPC, machine(16 * GiB, free))
    assert ask.summary.startswith("size /dev/shm for the loader: (prefetch_factor × num_workers + 1) × one")
    assert (ask.shm_bytes, host.summary, host.ipc) == (None, "use the host's /dev/shm", "host")


def test_under_run_a_death_with_no_need_known_asks_too():
    ask, _ = fixes_of(ENOSPC, container(64 * MiB, 300 * MiB), measured=died_in(64 * MiB))
    assert ask.shm_bytes is None and "--batch-size B" in ask.summary


# -- a consumer's own way to take less ---------------------------------------------------------------------------


def test_only_ray_is_told_an_object_store_that_fits_what_vllm_and_ray_say_there_was():
    """vLLM's text says 60.2 MiB was free, as Ray's says 64 MiB was: only Ray has an object store to fit in it
    (80% of 67,108,864 B = 53,687,091, a page under: 53,686,272)."""
    vllm = fixes_of(VLLM, container(64 * MiB))
    assert [f.ipc for f in vllm] == [None, "host"] and not any("object" in f.summary for f in vllm)
    ray = (  # InftyAI/llmaz#238
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes "
        "available. You can increase /dev/shm size by passing '--shm-size=5.04gb' to 'docker run'"
    )
    *_, store = fixes_of(ray, container(64 * MiB))
    assert store.summary == (
        "or an object store that fits the 64 MiB there was: ray start --object-store-memory=53686272 "
        "(ray.init(object_store_memory=53686272))"
    )
    assert store.caveat == "objects spill to disk sooner"


# -- shm-missing ------------------------------------------------------------------------------------------------


def test_nccl_denied_dev_shm_is_told_to_make_it_writable_and_nothing_else():
    denied = "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied"  # nccl#328
    (fix,) = fixes_of(denied, container(64 * MiB))
    assert (fix.shell, fix.shm_bytes) == ("chmod 1777 /dev/shm", None)


@pytest.mark.parametrize(
    ("text", "ended"),
    [
        ((CAPTURED / "ipc-none-semlock.log").read_text(), None),  # captured here under docker run --ipc=none
        ("", Exit(135, None, "the command's exit status")),  # a SIGBUS where there is no /dev/shm
    ],
)
def test_no_dev_shm_gets_one_of_docker_s_default_size_or_a_loader_without_workers(text, ended):
    """--ipc=none: a /dev/shm of its own (private IPC), of Docker's default 64 MiB × 1.25 -> 96 MiB; or load in the
    training process, where no segment is made. The two, no more, and no size said in the message."""
    facts = replace(container(64 * MiB), ipc=Ipc("none"), shm=Shm(False, None, None, None, "none"))
    log = scan_text(text)
    (finding,) = judge(log.diagnoses(), facts, ended=ended, clues=log.clues).report.findings
    grow, workers = finding.fixes
    assert grow.summary == "give the container a /dev/shm 96 MiB: 64 MiB needed + 25%"
    assert (grow.shm_bytes, grow.ipc) == (96 * MiB, "private")
    assert (workers.summary, workers.loader) == ("load in the training process", {"num_workers": 0})
    assert "needs ≥" not in finding.message


# -- fd-limit ---------------------------------------------------------------------------------------------------


def test_out_of_descriptors_raises_the_limit_to_65536_or_shares_through_files():
    """Captured here: 200 tensors a batch under docker run --ulimit nofile=128."""
    log = scan_text((CAPTURED / "nofile-128-emfile.log").read_text())
    (finding,) = judge(log.diagnoses(), container(64 * MiB, 8 * GiB), need=need_of(GiB)).report.findings
    limit, strategy = finding.fixes
    assert (limit.summary, limit.nofile) == ("raise the descriptor limit (soft and hard)", 65536)
    assert strategy.summary == "in the training script: torch.multiprocessing.set_sharing_strategy('file_system')"
    assert finding.message == (
        "the process ran out of file descriptors (each shared tensor holds one under the file_descriptor strategy) "
        "(line 9)"
    )


# -- memory-limit, from the kernel's OOM report ------------------------------------------------------------------


def kernel_report(limit_kb: int, shmem: int | None) -> str:
    """The lines of the kernel's OOM report explain reads, in the format of the one captured here (mm/memcontrol.c's
    'memory: usage', memory.stat's 'shmem' in bytes, mm/oom_kill.c's kill)."""
    stat = f"[20466.255115] shmem {shmem}\n" if shmem is not None else ""
    return (
        f"[20466.255067] memory: usage {limit_kb}kB, limit {limit_kb}kB, failcnt 0\n{stat}"
        "[20466.255197] Memory cgroup out of memory: Killed process 7165 (dd) total-vm:3292kB, anon-rss:1024kB, "
        "file-rss:848kB, shmem-rss:0kB, UID:0 pgtables:44kB oom_score_adj:0\n"
    )


HIT = "more than the {} limit that was hit (read from the kernel's report)"


@pytest.mark.parametrize(
    ("text", "size", "basis", "bound"),
    [
        # captured: max(64 MiB, 62.4 MiB + 256 MiB) × 1.25 = 398 MiB -> 512 MiB; /dev/shm took most of the limit
        (KERNEL_OOM, "512 MiB", f"{HIT.format('64 MiB')}, which held 62.4 MiB of /dev/shm", "62.4 MiB of the 64 MiB"),
        # no memory.stat in the lines kept: max(64 MiB, 0 + 256 MiB) × 1.25 = 320 MiB -> 384 MiB, /dev/shm unsaid
        (kernel_report(65536, None), "384 MiB", HIT.format("64 MiB"), None),
        # 480 MiB of /dev/shm in 512 MiB: (480 + 256) × 1.25 = 920 MiB -> 1 GiB
        (
            kernel_report(524288, 480 * MiB),
            "1 GiB",
            f"{HIT.format('512 MiB')}, which held 480 MiB of /dev/shm",
            "480 MiB of the 512 MiB",
        ),
        # exactly half the limit: most of it, said; max(512, 256 + 256) × 1.25 = 640 MiB -> 768 MiB
        (
            kernel_report(524288, 256 * MiB),
            "768 MiB",
            f"{HIT.format('512 MiB')}, which held 256 MiB of /dev/shm",
            "256 MiB of the 512 MiB",
        ),
        # a page under half: not said
        (
            kernel_report(524288, 256 * MiB - 4096),
            "768 MiB",
            f"{HIT.format('512 MiB')}, which held 256 MiB of /dev/shm",
            None,
        ),
    ],
)
def test_the_limit_the_kernel_says_was_hit_is_raised_and_a_dev_shm_that_took_half_of_it_bounded(
    text, size, basis, bound
):
    grow, *rest = fixes_of(text, container(64 * MiB))
    assert grow.summary == f"memory limit of {size}: {basis} + 25%"
    number, unit = size.split()
    assert grow.memory_bytes == int(number) * {"MiB": MiB, "GiB": GiB}[unit]
    if bound is None:
        assert rest == []
    else:
        (said,) = rest
        assert said.summary == (
            f"size /dev/shm below the memory limit: it held {bound} limit, and a full one fails with an error, "
            "not an OOM kill"
        )


def test_the_kernels_limit_speaks_only_for_the_oom_kill_not_for_a_leak_in_the_same_log():
    """vllm#8933's leaked segments beside the captured OOM report: the leak's fix is clean's, whatever the limit."""
    leak = "UserWarning: resource_tracker: There appear to be 1 leaked shared_memory objects to clean up at shutdown"
    log = scan_text(leak + "\n" + KERNEL_OOM)
    findings = judge(log.diagnoses(), container(64 * MiB, GiB), clues=log.clues).report.findings
    fixes = {f.id: [x.summary for x in f.fixes] for f in findings}
    assert fixes["python-shm-leaked"] == [
        "see what no process holds with `shmdoctor clean`, free it with `shmdoctor clean --yes`"
    ]
    assert fixes["kernel-oom-kill"][0].startswith("memory limit of 512 MiB: more than the 64 MiB limit that was hit")


# -- memory-limit, from the engine's OOMKilled ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shm", "limit", "grown", "said", "bounded"),
    [
        # 2 GiB /dev/shm over a 700 MiB limit: memory for it (256 MiB + 2.5 GiB = 2.75 GiB -> 3 GiB), or bound it
        (2 * GiB, 700 * MiB, 3 * GiB, "3 GiB", True),
        # /dev/shm as large as the limit is not over it: 256 MiB + 1.25 GiB -> 1.5 GiB
        (GiB, GiB, 1536 * MiB, "1.5 GiB", False),
        (64 * MiB, GiB, 384 * MiB, "384 MiB", False),  # a small one: 256 MiB + 80 MiB = 336 MiB -> 384 MiB
        (64 * MiB, None, 384 * MiB, "384 MiB", False),  # no memory limit known
    ],
)
def test_an_oom_kill_asks_memory_for_the_dev_shm_and_bounds_a_dev_shm_larger_than_the_limit(
    shm, limit, grown, said, bounded
):
    (finding,) = judge((), container(shm, limit), ended=OOM_KILLED).report.findings
    grow, *rest = finding.fixes
    assert grow.memory_bytes == grown
    assert grow.summary == f"memory limit of {said}: the loader's /dev/shm + 25%, the training process, what is in use"
    if bounded:
        (bound,) = rest
        assert bound.summary == (
            "size /dev/shm below the memory limit (700 MiB): a full /dev/shm then fails with an error instead of a "
            "silent OOM kill"
        )
    else:
        assert rest == []


def test_an_oom_kill_where_dev_shm_s_size_is_unknown_asks_for_what_run_saw_in_it_or_nothing():
    """/dev/shm of unknown size: the peak run measured in it (300 MiB: 256 MiB + 375 MiB = 631 MiB -> 768 MiB);
    nothing measured, no size to ask."""
    facts = container(None, GiB, used=None)
    seen = Measured(peak_bytes=300 * MiB, size_bytes=None, peak_t=1.0, elapsed=2.0)
    (finding,) = judge((), facts, ended=OOM_KILLED, measured=seen).report.findings
    assert [f.memory_bytes for f in finding.fixes] == [768 * MiB]
    (finding,) = judge((), facts, ended=OOM_KILLED).report.findings
    assert finding.fixes == ()


# -- remove-ipc, shm-leak, not-shm -------------------------------------------------------------------------------

LOGIND = "sed -i 's/^#\\?RemoveIPC=.*/RemoveIPC=no/' /etc/systemd/logind.conf && systemctl restart systemd-logind"


@pytest.mark.parametrize(
    ("text", "shells"),
    [
        # autobase-tech/autobase#1200: systemd-logind removed PostgreSQL's segment
        (
            'FATAL: could not open shared memory segment "/PostgreSQL.3317458760": No such file or directory',
            [LOGIND, "loginctl enable-linger $USER"],
        ),
        # vllm#8933: segments left behind
        (
            "UserWarning: resource_tracker: There appear to be 1 leaked shared_memory objects to clean up at shutdown",
            [None],
        ),
        # pytorch#87861: mmap's ENOMEM, the kernel's limit on mappings
        (
            "RuntimeError: unable to mmap 29764 bytes from file </torch_10182_3020184674_63991>: Cannot allocate "
            "memory (12)",
            ["sysctl -w vm.max_map_count=262144", None],
        ),
        # a bus error with 64 GiB free: another mapped file; nothing to change in /dev/shm
        (BUS, []),
        # nccl#1518: cudaHostRegister failed right before: not /dev/shm
        (
            "node1:55:60 [0] transport/shm.cc:590 NCCL WARN Cuda failure 'invalid argument'\nnode1:55:60 [0] "
            "misc/shmutils.cc:129 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
            [],
        ),
    ],
)
def test_each_cause_that_no_size_fixes_gets_its_own_fix_and_no_memory_or_dev_shm_size(text, shells):
    """In a machine whose /dev/shm is 64 GiB free: none asks a size of it or memory to hold it."""
    fixes = fixes_of(text, machine(64 * GiB, 64 * GiB))
    assert [f.shell for f in fixes] == shells
    assert all(f.shm_bytes is None and f.memory_bytes is None for f in fixes)
