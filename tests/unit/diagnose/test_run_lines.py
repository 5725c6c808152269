"""explain reads `shmdoctor run`'s own lines in a pasted log (issue 35 item 7): the place run measured, the loaders'
need it computed and how the command ended (the lines as render/run.py prints them, docs/commands/run.md's)."""

import json

from tests.helpers import forked_cli

FACTS = (
    "shmdoctor run: /dev/shm 64 MiB, 0 B used: Docker's shm mount (--shm-size, 64 MiB by default); IPC private; "
    "memory limit 2 GiB; ulimit -n 20000; sampling every 0.1 s"
)
LOADER = (
    "shmdoctor run: loader (pid 6): batch_size=100, num_workers=4, prefetch_factor=2, pin_memory=False, "
    "persistent_workers=False; one batch 100 MiB in 1 tensor(s), measured in the workers"
)
ENDED = (
    "shmdoctor run: python train.py exited 135 (SIGBUS) after 11.7 s; /dev/shm peak 62 MiB of 64 MiB (97%) at 7.6 s; "
    "the loaders' need 900 MiB ((2·4 + 1) × 100 MiB, read from the loaders it ran)"
)
BUS = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."


def _explain(*lines: str) -> dict:
    proc = forked_cli("explain", "--format", "json", input_text="\n".join(lines) + "\n")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_runs_lines_give_the_place_the_need_and_the_exit_of_a_pasted_log():
    doc = _explain(FACTS, LOADER, BUS, ENDED)
    assert doc["verdict"] == "fail"
    place = doc["place"]
    assert (place["known"], place["shm_bytes"], place["memory_limit_bytes"]) == ("text", 64 * 2**20, 2 * 2**30)
    assert "shmdoctor run's facts, line 1" in place["said"]
    assert doc["exit_code"] == 135
    (bus,) = [d for d in doc["diagnoses"] if d["signature"] == "torch-worker-bus-error"]
    assert bus["cause"] == "shm-space"
    fix = next(f for f in doc["findings"] if f["id"] == "torch-worker-bus-error")["fixes"][0]
    assert (
        fix["shm_bytes"] >= 900 * 2**20 * 1.25 and "the loaders' need shmdoctor run printed, line 4" in fix["summary"]
    )


def test_a_need_run_printed_that_fits_where_it_ran_exonerates_the_bus_error():
    """run's need below the /dev/shm run measured: the bus error came from another mapped file."""
    roomy = FACTS.replace("/dev/shm 64 MiB", "/dev/shm 2 GiB")
    doc = _explain(roomy, BUS, ENDED.replace("64 MiB (97%)", "2 GiB (3%)"))
    assert doc["verdict"] == "ok"
    (bus,) = [d for d in doc["diagnoses"] if d["signature"] == "torch-worker-bus-error"]
    assert bus["cause"] == "not-shm"


def test_lines_that_only_look_like_runs_are_not_read():
    doc = _explain("echo 'shmdoctor run: /dev/shm 64 MiB' was typed here", BUS)
    assert doc["place"]["known"] == "unknown" and doc["exit_code"] is None
