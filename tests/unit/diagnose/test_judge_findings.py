"""The findings explain reports: what each message says (the text's meaning, where in the log, why the facts made it
not shared memory, the size needed), which findings an exit status adds, and their order (errors first). Texts are
quoted from real logs (the issue each comes from); messages are written here as a user reads them."""

import pytest

from shmdoctor.diagnose import Exit, judge, scan_text
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.sizes import GiB, MiB

ENOSPC = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"
ENOSPC_SAYS = "a DataLoader worker could not allocate a batch in /dev/shm: it is full"
# pytorch#87861
ENOMEM = (
    "RuntimeError: unable to mmap 29764 bytes from file </torch_10182_3020184674_63991>: Cannot allocate memory (12)"
)
ENOMEM_SAYS = (
    "mapping a shared tensor failed with ENOMEM: the process hit the kernel's limit on mappings (vm.max_map_count, "
    "65530 by default, one a shared tensor) or ran out of memory, not /dev/shm's space"
)
SIGBUS = Exit(135, None, "the command's exit status")


def container(size: int) -> Facts:
    return Facts(
        Target("container", "job"), Shm.unmeasured(size, "docker-shm", "inspect"), Ipc("private"), Memory(None, None)
    )


def free_machine(free: int) -> Facts:
    return Facts(Target("local", "gpu-node"), Shm(True, free, 0, free, "system"), Ipc("host"), Memory(None, 0))


def messages(text: str, facts: Facts, **kw) -> list[str]:
    log = scan_text(text)
    return [f.message for f in judge(log.diagnoses(), facts, clues=log.clues, **kw).report.findings]


@pytest.mark.parametrize(
    ("text", "facts", "said"),
    [
        # the text says it, no number: its meaning and its line, nothing of NCCL
        (ENOSPC, container(64 * MiB), f"{ENOSPC_SAYS} (line 1)"),
        # vLLM 0.33 (FACTS.md): the size it asked, nothing of NCCL
        (
            "RuntimeError: Insufficient space in /dev/shm for psm_1a2b3c4d: 161.0 MiB required, 60.2 MiB free. "
            "Increase /dev/shm (e.g. --shm-size or --ipc=host).",
            container(64 * MiB),
            "vLLM could not create a shared-memory ring buffer (line 1); needs ≥ 161 MiB",
        ),
        # NVIDIA/nccl#328: no /dev/shm for this user, whatever NCCL's size: neither a size nor NCCL's
        (
            "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission denied",
            container(64 * MiB),
            "NCCL could not create a segment in /dev/shm: it is not writable for this user (line 1)",
        ),
        # the text says it is not /dev/shm
        (ENOMEM, container(64 * MiB), f"not shared memory: {ENOMEM_SAYS} (line 1)"),
        # the facts say it: why first, then where and what the text meant
        (
            "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error.",
            free_machine(64 * GiB),
            "not shared memory: /dev/shm has 64 GiB free here: a bus error then comes from another mapped file "
            "(LMDB, np.memmap, a file on a network volume) (line 1: a DataLoader worker was killed by a bus error)",
        ),
    ],
)
def test_a_message_says_what_the_text_means_where_and_why_the_facts_made_it_not_shared_memory(text, facts, said):
    assert messages(text, facts) == [said]


def test_an_exit_status_is_told_by_what_saw_it_not_by_a_line():
    (said,) = messages("", container(64 * MiB), ended=SIGBUS)
    assert said.endswith("(the command's exit status: 135 (SIGBUS))") and "line" not in said


@pytest.mark.parametrize(
    ("text", "found"),
    [
        # the log says it already: the shell's own words for a 135
        ("Bus error (core dumped)", ["shell-bus-error"]),
        # the log says something else: the bus error is added
        (ENOSPC, ["torch-shm-enospc", "exit-sigbus"]),
    ],
)
def test_an_exit_by_sigbus_is_a_finding_unless_the_log_already_says_it(text, found):
    assert [d.signature for d in judge(scan_text(text).diagnoses(), container(64 * MiB), ended=SIGBUS).diagnoses] == (
        found
    )


def test_errors_come_before_what_is_not_shared_memory_whatever_the_order_of_the_log():
    log = scan_text(f"{ENOMEM}\n{ENOSPC}")
    ex = judge(log.diagnoses(), container(64 * MiB))
    assert [d.signature for d in ex.diagnoses] == ["torch-mmap-enomem", "torch-shm-enospc"]  # the log's order
    assert [(f.id, f.severity) for f in ex.report.findings] == [
        ("torch-shm-enospc", "error"),
        ("torch-mmap-enomem", "info"),
    ]
    assert [f.message for f in ex.report.findings] == [
        f"{ENOSPC_SAYS} (line 2)",
        f"not shared memory: {ENOMEM_SAYS} (line 1)",
    ]
