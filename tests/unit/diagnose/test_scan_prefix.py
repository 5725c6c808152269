"""A log read from where a collector keeps it carries the collector's prefix on every line: containerd's pod logs
(/var/log/pods/…/0.log, CRI format: time, stream, F for a full line or P for a part), `docker logs -t` and
`kubectl logs --timestamps` (RFC 3339 time), journald and syslog (time, host, unit[pid]). The same failure texts
are found under each prefix as without one."""

import pytest

from shmdoctor.diagnose import scan_text

PREFIXES = {
    "cri": "2024-05-01T10:00:00.123456789Z stderr F ",
    "cri-offset": "2024-05-01T12:00:00.123456789+02:00 stdout F ",
    "docker-t": "2024-05-01T10:00:00.123456789Z ",
    "journald": "May  1 10:00:00 gpu-node-3 python3[12345]: ",
    "syslog": "Dec 24 23:59:59 node kernel: ",
}
# Each text as its source printed it (tests/data/explain: the seed article, python/cpython#93253, ray-project's
# RayWorker line of harvested.yaml, NVIDIA/nccl#290), and the signatures found without a prefix.
TEXTS = {
    "worker-bus-error": (
        ["RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error."],
        ["torch-worker-killed-bus-error"],
    ),
    "semlock": (
        [
            '  File "/usr/local/lib/python3.8/multiprocessing/synchronize.py", line 57, in __init__',
            "    sl = self._semlock = _multiprocessing.SemLock(",
            "OSError: [Errno 28] No space left on device",
        ],
        ["python-semlock-enospc"],
    ),
    "ray-sigbus": (
        ["(RayWorker pid=3554640) *** SIGBUS received at time=1692931519 on cpu 133 ***"],
        ["ray-sigbus"],
    ),
    "nccl-fallocate": (
        ["gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"],
        ["nccl-fallocate"],
    ),
    "shell-bus-error": (["Bus error (core dumped)"], ["shell-bus-error"]),
}


def signatures(lines: list[str]) -> list[str]:
    return [d.signature for d in scan_text("\n".join(lines)).diagnoses()]


@pytest.mark.parametrize("text", TEXTS, ids=list(TEXTS))
@pytest.mark.parametrize("prefix", PREFIXES, ids=list(PREFIXES))
def test_a_collectors_prefix_on_every_line_changes_nothing_found(prefix, text):
    lines, found = TEXTS[text]
    assert signatures(lines) == found  # the text alone
    assert signatures([PREFIXES[prefix] + line for line in lines]) == found


def test_the_excerpt_is_the_message_without_the_prefix():
    [d] = scan_text(PREFIXES["cri"] + TEXTS["worker-bus-error"][0][0]).diagnoses()
    assert d.excerpt == "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error."


def test_a_line_containerd_split_in_parts_is_found_whole():
    """CRI's P: a long line cut into parts, the last one F (containerd splits at 16 KiB)."""
    log = (
        "2024-05-01T10:00:00.1Z stderr P RuntimeError: unable to write to file </torch_18693_\n"
        "2024-05-01T10:00:00.1Z stderr F 1954506624> at /pytorch/torch/lib/TH/THAllocator.c:271\n"
    )
    assert [d.signature for d in scan_text(log).diagnoses()] == ["torch-shm-write"]


@pytest.mark.parametrize(
    "line",
    [
        "job 7: 2024-05-01T10:00:00Z Bus error (core dumped)",  # a time inside the line is the line's own text
        "2024-05-01 10:00:00 Bus error (core dumped)",  # Python logging's time (a space, no T) is no collector's
        "May  1 10:00:00 node: Bus error (core dumped)",  # syslog has a host before the program
    ],
)
def test_only_a_collectors_own_prefix_is_taken_off(line):
    assert signatures([line]) == []
