"""The general reader (diagnose/reader.py): an errno or a signal of the family with a shared-memory context in the
same block is read as that failure where no known text matched, the consumer from the block; each reading at the
edge of its window, and the look-alikes that must stay not recognised (a bus error of LMDB or np.memmap, a bare NCCL
system error, ENOSPC on a disk path, System V's shmget, InfiniBand's ENOMEM, a semaphore opened, not created)."""

import json

import pytest

from shmdoctor.diagnose import scan_text
from shmdoctor.diagnose.reader import WINDOW
from tests.helpers import forked_cli


def _read(log: str) -> list[tuple[str, str, str, int | None, str]]:
    return [(d.signature, d.cause, d.consumer, d.line, d.found_by) for d in scan_text(log).diagnoses()]


# Each with its source: the words of real texts (tests/data/explain/fourth-pass.yaml, heldout-4.yaml), cut to the
# lines that carry the evidence
READ = [
    (  # sony/nnabla-ext-cuda#273: NCCL named, the errno and "shared memory segment" in prose
        "Solve the nccl error `ncclCommInitRank failed.` While running more than 2 GPUs.\n"
        "That detail is No space left on device while creating shared memory segment.",
        ("read-shm-enospc", "shm-space", "nccl", 2),
    ),
    (  # NVIDIA/JAX-Toolbox#183: gdb's SIGBUS, NCCL's shm call two lines below inside XLA
        'Thread 787 "imagenet_fake_d" received signal SIGBUS, Bus error.\n'
        "[Switching to Thread 0x7f45d7dff640 (LWP 3925)]\n"
        "0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) () from "
        "/usr/local/lib/python3.10/dist-packages/jaxlib/xla_extension.so",
        ("read-shm-bus-error", "shm-space", "nccl", 1),
    ),
    (  # moby/moby#4981: strace, the segment opened in /dev/shm two lines above the write's ENOSPC
        'open("/dev/shm/Intel_MPI_LECnRQ", O_RDWR|O_CREAT|O_EXCL, 0600) = 12\n'
        "lseek(12, 262847, SEEK_SET)             = 262847\n"
        'write(12, "\\0", 1)                      = -1 ENOSPC (No space left on device)',
        ("read-shm-enospc", "shm-space", "unknown", 3),
    ),
    (  # mvantellingen/localshop#68: billiard's pool, ENOSYS printed above its traceback (cut before SemLock)
        "[2013-07-17 14:31:40,805: ERROR/MainProcess] Unrecoverable error: OSError(38, 'Function not implemented')\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python2.7/dist-packages/billiard/pool.py", line 809, in __init__',
        ("read-shm-enosys", "shm-missing", "celery", 1),
    ),
    (  # margince/margince#5019: PostgreSQL's message wrapped before the segment's name
        'segment "/PostgreSQL.2791547698" to 33554432 bytes: No space left on device (SQLSTATE 53100)',
        ("read-shm-enospc", "shm-space", "postgresql", 1),
    ),
    (  # containers/toolbox#9: Ansible's words around EROFS
        "ERROR! Unable to use multiprocessing, this is normally caused by lack of access to /dev/shm: [Errno 30] "
        "Read-only file system",
        ("read-shm-read-only", "shm-missing", "multiprocessing", 1),
    ),
    (  # pytorch/tutorials#2475: a segfault inside NCCL's shm call
        "If `data_parallel_tutorial.py` is executed without this option it would segfault in `ncclShmOpen`",
        ("read-shm-crash", "shm-space", "nccl", 1),
    ),
    (  # cypress-io/cypress#598: Chromium's renderer crash in Cypress's words
        'Intermittently getting "Renderer process crashed" when running the tests via jenkins.',
        ("read-browser-crash", "shm-space", "chromium", 1),
    ),
    (  # electron/electron#4491: Chromium's signal handler, a frame copying into shared memory
        "Received signal 7 BUS_ADRERR 7fac3055e29c\n#5 0x0000030784e0 printing::PrintWebViewHelper::"
        "CopyMetafileDataToSharedMem()",
        ("read-shm-bus-error", "shm-space", "chromium", 1),
    ),
    (  # stephen-fox/chrome-docker#8: a FATAL line of Chromium's own log
        "`[778:7:0131/235140.910186:FATAL:memory.cc(22)] Out of memory. size=524288`",
        ("read-browser-crash", "shm-space", "chromium", 1),
    ),
    (  # goauthentik/authentik#16432: prometheus_client's own file name
        "PermissionError: [Errno 13] Permission denied: '/dev/shm/counter_2.db'",
        ("read-shm-denied", "shm-missing", "prometheus-client", 1),
    ),
    (  # triton-inference-server/server#4869: df of a full /dev/shm in a pod, Triton named above
        "I installed triton server using helm chart.\nFilesystem      Size  Used Avail Use% Mounted on\n"
        "shm              64M   64M     0 100% /dev/shm",
        ("read-shm-full", "shm-space", "triton", 3),
    ),
]


@pytest.mark.parametrize(("log", "want"), READ, ids=[w[0] + str(i) for i, (_, w) in enumerate(READ)])
def test_an_errno_or_signal_with_a_shared_memory_context_in_its_block_is_read(log, want):
    assert _read(log) == [(*want, "reader")]


# Look-alikes: the same errno or signal, and a word of the context, that are not /dev/shm
NOT_READ = {
    "LMDB's bus error": 'Bus error (core dumped)\n  File "train.py", line 9, in load\n    env = lmdb.open(path)\n'
    "shm 64M 1M 63M 2% /dev/shm",
    "np.memmap's bus error beside shared memory words": "Fatal Python error: Bus error\n"
    '  File "numpy/core/memmap.py", line 267\nshared memory is fine',
    "a bare NCCL system error": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, "
    "NCCL version 2.7.8",
    "a checkpoint's ENOSPC on a disk path": "OSError: [Errno 28] No space left on device: '/ckpt/epoch_3.pt'\n"
    "(the loader's /dev/shm is 2g)",
    "df with room beside a disk's ENOSPC": "OSError: [Errno 28] No space left on device\n"
    "overlay 50G 50G 0 100% /\nshm 64M 0 64M 0% /dev/shm",
    "System V's shmget (daml#5824)": "FATAL:  could not create shared memory segment: No space left on device\n"
    "DETAIL:  Failed system call was shmget(key=5432001, size=56, 03600).",
    "InfiniBand's ENOMEM beside 'shm' (nccl-tests#206)": "misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 "
    "failed with error Cannot allocate memory\nto disable shm on a single node",
    "a semaphore opened, not created (libfaketime#199)": "libfaketime: In ft_shm_init(), sem_open failed: No such file "
    "or directory",
    "a crash reporter beside Chrome": "Chrome 120 started; crashpad handler ready\ncrash reporting is enabled",
    "a permission error on a socket beside /dev/shm": "connect(/var/run/docker.sock): Permission denied\n"
    "mounted /dev/shm",
    "a SIGBUS in PostgreSQL's main segment, huge pages (yugabyte-db#28816)": "* thread #1, name = 'postgres', stop "
    "reason = signal SIGBUS\n  * frame #0: postgres`PGSharedMemoryCreate(size=1073741824) at pg_shmem.c:754:2",
    "EACCES said at a source file of a chromium folder, no shared memory": "failed to open file: Permission denied: "
    "file /build/src/ipc/chromium/src/base/file_util.cc, line 250",
    "ENOSYS with no shared-memory context": "OSError: [Errno 38] Function not implemented: 'inotify_init'",
}


@pytest.mark.parametrize("log", NOT_READ.values(), ids=NOT_READ.keys())
def test_a_look_alike_stays_not_recognised(log):
    assert [d for d in scan_text(log).diagnoses() if d.found_by == "reader"] == []


@pytest.mark.parametrize(("apart", "read"), [(WINDOW, True), (WINDOW + 1, False)])
def test_the_block_is_window_lines_either_side(apart, read):
    error = "OSError: [Errno 28] No space left on device"
    for log in (
        [error, *["x"] * (apart - 1), "see /dev/shm"],
        ["see /dev/shm", *["x"] * (apart - 1), error],
    ):
        found = _read("\n".join(log))
        assert found == ([("read-shm-enospc", "shm-space", "unknown", log.index(error) + 1, "reader")] if read else [])


def test_a_known_text_says_it_and_its_block_names_who():
    """UCX's bus error is the catalogue's (caught-sigbus); NCCL's frames below name the consumer (pipedream#76)."""
    log = (
        "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
        "==== backtrace (tid:   3095) ====\n"
        " 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
    )
    (d,) = scan_text(log).diagnoses()
    assert (d.signature, d.consumer, d.found_by) == ("caught-sigbus", "nccl", "catalogue")
    assert d.evidence == "NCCL's frame (line 3) names who"


def test_a_pool_names_the_semaphore_it_made_before_semlock_and_a_frame_before_a_bare_name():
    celery = "OSError(13, 'Permission denied')\n  File \"billiard/synchronize.py\"\n    SemLock.__init__(self)"
    assert _read(celery) == [("read-shm-denied", "shm-missing", "celery", 1, "reader")]
    loader = "NCCL INFO Bootstrap\nbus error in worker: insufficient shared memory (shm) for the DataLoader"
    assert _read(loader) == [("read-shm-bus-error", "shm-space", "dataloader", 2, "reader")]


def test_a_reading_gives_way_to_a_known_text_of_the_same_cause():
    """CPython's SemLock within 4 lines is the catalogue's; a second ENOSPC in prose is the same failure."""
    log = "    sl = self._semlock = _multiprocessing.SemLock(\nOSError: [Errno 28] No space left on device\n"
    log += "the same No space left on device again in /dev/shm"
    assert _read(log) == [("python-semlock-enospc", "shm-space", "multiprocessing", 2, "catalogue")]


def test_the_cli_says_what_was_read_and_from_what_in_json_and_text():
    log = "Unable to use multiprocessing, caused by lack of access to /dev/shm: [Errno 30] Read-only file system\n"
    proc = forked_cli("explain", "--format", "json", input_text=log)
    assert proc.returncode == 1, proc.stderr
    (d,) = json.loads(proc.stdout)["diagnoses"]
    assert (d["found_by"], d["signature"], d["consumer"]) == ("reader", "read-shm-read-only", "multiprocessing")
    assert d["evidence"] == "/dev/shm (line 1), Python's multiprocessing (line 1)"
    text = forked_cli("explain", input_text=log).stdout
    assert "read with /dev/shm (line 1)" in text and "read by the general reader" in text
    assert "mount /dev/shm read-write" in text or "read-write" in text


def test_a_flood_of_errnos_keeps_memory_flat():
    """100,000 ENOSPC lines each naming /dev/shm: one reading, every line counted; what waits is bounded."""
    scanner = scan_text("start\n" + "write: ENOSPC in /dev/shm/x\n" * 100_000)
    (d,) = scanner.diagnoses()
    assert (d.signature, d.line, d.count) == ("read-shm-enospc", 2, 100_000)
    assert len(scanner.reader._open) <= 64 and len(scanner.reader._done) == 1


def test_a_bare_nccl_system_error_beside_nccls_own_shared_memory_failure_is_that_failure():
    """UCX's bus error in NCCL's frames (pipedream#76), then PyTorch's 'unhandled system error': one failure, named
    once as /dev/shm; the same error alone stays ambiguous (test_place.py)."""
    from shmdoctor.diagnose import judge
    from shmdoctor.diagnose.place import elsewhere

    log = (
        "[h:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
        " 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.7.8\n"
    )
    scanned = scan_text(log)
    ex = judge(scanned.diagnoses(), elsewhere(scanned.clues), clues=scanned.clues)
    assert [(d.signature, d.cause) for d in ex.diagnoses] == [
        ("caught-sigbus", "shm-space"),
        ("nccl-system-error", "shm-space"),
    ]
    assert ex.diagnoses[1].reason == "line 1 says NCCL's shared memory failed: the same failure"
