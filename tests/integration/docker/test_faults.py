"""When the patient is failing, in a real container: Ctrl-C in clean, and /dev/shm full, absent, read-only, /proc
partly unreadable.

Each fault is made for real in a container and `check`, `watch` and `clean` run inside it: a finding or a one-line
error with a defined exit code, never a traceback.
"""

from __future__ import annotations

import json

from tests.helpers import INTERRUPTED, PYTHON, docker_run, unique_name, validate

CLEAN_INTERRUPTED = """
import json, os, signal, subprocess, sys, time
d, n = "/dev/shm", 30000  # a tmpfs: its size shrinks with each removal
for i in range(n):
    open(os.path.join(d, f"nccl-{i:06d}"), "w").close()
full = os.stat(d).st_size
proc = subprocess.Popen([sys.executable, "-m", "shmdoctor", "clean", "--yes", "--format", "json"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.monotonic() + 60
while os.stat(d).st_size == full and time.monotonic() < deadline:
    time.sleep(0.01)
proc.send_signal(signal.SIGINT)
out, err = proc.communicate()
print(json.dumps({"rc": proc.returncode, "stderr": err, "doc": json.loads(out), "n": n, "left": len(os.listdir(d))}))
"""


def test_ctrl_c_in_clean_reports_exactly_what_it_removed(images):
    # In a container: --yes without names, on a /dev/shm of its own.
    proc = docker_run(
        "--name",
        unique_name("faults-clean"),
        "--shm-size=64m",
        cmd=["python", "-c", CLEAN_INTERRUPTED],
        image=PYTHON,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.splitlines()[-1])
    assert "Traceback" not in r["stderr"], r["stderr"]
    assert r["rc"] == INTERRUPTED, "it finished before the SIGINT landed"
    assert [line for line in r["stderr"].splitlines() if line] == ["shmdoctor: interrupted"]
    doc = validate(r["doc"])
    assert doc["interrupted"] and 0 < len(doc["removed"]) == r["n"] - r["left"]


# --- faults, made for real in containers --------------------------------------------------------------------------

CHECK, WATCH, CLEAN, CLEAN_YES = (
    "check --format json",
    "watch --duration 1 --format json",
    "clean --format json",
    "clean --yes --format json",
)

RUN_ALL = """
import json, subprocess, sys
out = {}
for spec in sys.argv[1:]:
    p = subprocess.run([sys.executable, "-m", "shmdoctor", *spec.split()], capture_output=True, text=True)
    out[spec] = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
print(json.dumps(out))
"""


def _fault(*docker_args: str, setup: str = "", user: str = "", commands=(CHECK, WATCH, CLEAN)) -> dict:
    """Run the commands inside a container made with docker_args after `setup` (as root); user: setpriv to it."""
    drop = f"setpriv --reuid={user} --regid={user} --clear-groups " if user else ""
    script = f'{setup}\nexec {drop}python -c "$RUN_ALL" ' + " ".join(f"'{c}'" for c in commands)
    proc = docker_run(
        "-e",
        f"RUN_ALL={RUN_ALL}",
        *docker_args,
        cmd=["sh", "-c", script],
        image=PYTHON,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.splitlines()[-1])
    for spec, r in results.items():
        assert "Traceback" not in r["stderr"], (spec, r["stderr"])
        if r["rc"] in (2, 3):
            assert len(r["stderr"].strip().splitlines()) == 1, (spec, r["stderr"])
    return results


def _doc(r: dict) -> dict:
    return validate(json.loads(r["stdout"]))


def _jsonl(r: dict) -> list[dict]:
    return [validate(json.loads(line)) for line in r["stdout"].splitlines()]


def _ids(r: dict) -> list[str]:
    return [f["id"] for f in _doc(r)["findings"]]


def test_full_shm(images):
    leak = "dd if=/dev/zero of=/dev/shm/nccl-leak01 bs=64k count=64 2>/dev/null"  # 4 MiB into 1 MiB: full
    r = _fault("--shm-size=1m", setup=leak, commands=(CHECK, WATCH, CLEAN, CLEAN_YES, "check --format json --x"))
    assert r[CHECK]["rc"] == 0 and "shm-full" in _ids(r[CHECK])
    summary = _jsonl(r[WATCH])[-1]
    assert r[WATCH]["rc"] == 0 and summary["peak_bytes"] == summary["size_bytes"] == 1024**2
    assert r[CLEAN]["rc"] == 0 and [e["name"] for e in _doc(r[CLEAN])["leaked"]] == ["nccl-leak01"]
    assert r[CLEAN_YES]["rc"] == 0 and _doc(r[CLEAN_YES])["freed_bytes"] == 1024**2
    assert r["check --format json --x"]["rc"] == 2  # a bad flag stays a usage error when the patient is failing


def test_full_shm_is_judged_against_a_loader(images):
    fill = "dd if=/dev/zero of=/dev/shm/fill bs=64k count=64 2>/dev/null"
    loader = "--batch-size 8 --num-workers 2 --sample-bytes 64k"
    r = _fault("--shm-size=1m", setup=fill, commands=(f"{CHECK} {loader}", f"{WATCH} {loader}", CLEAN_YES))
    assert r[f"{CHECK} {loader}"]["rc"] == 1 and _ids(r[f"{CHECK} {loader}"])[0] == "shm-too-small"
    assert _jsonl(r[f"{WATCH} {loader}"])[-1]["budget_bytes"] == 5 * 8 * 64 * 1024
    assert r[CLEAN_YES]["rc"] == 0 and _doc(r[CLEAN_YES])["unrecognised"]["count"] == 1  # 'fill' is left alone


def test_absent_shm(images):
    r = _fault("--ipc=none")
    assert r[CHECK]["rc"] == 1 and _ids(r[CHECK])[0] == "no-shm"
    for spec, what in ((WATCH, "watch"), (CLEAN, "clean")):
        assert r[spec]["rc"] == 3
        message = f"shmdoctor: error: there is no /dev/shm here (--ipc=none?): nothing to {what}"
        assert r[spec]["stderr"].strip() == message


def test_read_only_shm(images):
    r = _fault("--tmpfs", "/dev/shm:ro")
    assert r[CHECK]["rc"] == 1 and _ids(r[CHECK])[0] == "shm-read-only"
    assert r[WATCH]["rc"] == 0 and _jsonl(r[WATCH])[-1]["samples"] >= 2
    assert r[CLEAN]["rc"] == 0 and _doc(r[CLEAN])["leaked"] == []


def test_read_only_shm_with_a_leak_it_cannot_remove(images, tmp_path):
    (tmp_path / "nccl-leak01").write_bytes(b"\0" * 8192)
    r = _fault("--mount", f"type=bind,src={tmp_path},dst=/dev/shm,readonly", commands=(CHECK, CLEAN_YES))
    assert _ids(r[CHECK])[0] == "shm-read-only"
    failed = _doc(r[CLEAN_YES])["failed"]
    assert r[CLEAN_YES]["rc"] == 1 and [(f["name"], f["why"]) for f in failed] == [
        ("nccl-leak01", "Read-only file system")
    ]
    assert (tmp_path / "nccl-leak01").exists()


def test_proc_partly_unreadable(images):
    # root holds a segment through a descriptor /proc will not show to nobody; nobody runs shmdoctor.
    setup = (
        "head -c 8192 /dev/zero > /dev/shm/nccl-byroot && chown 65534 /dev/shm/nccl-byroot\n"
        "sh -c 'exec 3</dev/shm/nccl-byroot; touch /tmp/holding; exec sleep 600' &\n"
        "while [ ! -e /tmp/holding ]; do sleep 0.05; done"
    )
    r = _fault(setup=setup, user="65534", commands=(CHECK, WATCH, CLEAN_YES))
    assert r[CHECK]["rc"] == 0
    summary = _jsonl(r[WATCH])[-1]
    assert r[WATCH]["rc"] == 0 and any("(sleep 600): permission denied" in u for u in summary["unreadable"])
    doc = _doc(r[CLEAN_YES])
    assert any("permission denied" in u for u in doc["unreadable"])
    # /proc could not show the holder; the kernel's lease could, and the segment stays.
    assert r[CLEAN_YES]["rc"] == 0 and doc["removed"] == [] and doc["failed"] == []
    assert [(e["name"], e["why"]) for e in doc["kept"]] == [
        ("nccl-byroot", "a process /proc did not show has it open or mapped")
    ]
