"""clean inside real containers: --yes without names on a tmpfs of its own, PID namespaces, peers, other users.

The pure part and clean on the host's /dev/shm (limited to this test's own names): tests/unit/commands/test_clean.py.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from shmdoctor.shm.segments import NOT_VISIBLE, creator_pid, recognise
from tests.helpers import PYTHON, REPO, docker_run, unique_name, validate

UNKNOWN_AND_KNOWN = """
import os, subprocess, sys
d = sys.argv[1]
def write(name): open(os.path.join(d, name), "wb").write(b"1" * 8192)
subprocess.run([sys.executable, "-c", f"open('{d}/torch_%d_1_0' % __import__('os').getpid(), 'wb').write(b'1')"])
for name in ("nccl-left01", "sem.mp-left_ovr", "psm_5f3a", "sem.other", "notes.txt", "torch_utils.py",
             "nccl-tests.log", "torch_1_2_3.py", "sem.mp-short"):
    write(name)
os.symlink("/etc/hostname", os.path.join(d, "torch_1_2_3"))
os.mkdir(os.path.join(d, "torch_1_2_4"))
out = subprocess.run([sys.executable, "-m", "shmdoctor", "clean", "--yes", "--format", "json", "--path", d],
                     capture_output=True, text=True)
print(out.returncode, out.stderr.strip())
print(out.stdout)
print(" ".join(sorted(os.listdir(d))))
"""


def test_yes_never_touches_what_it_does_not_recognise(images):
    # A tmpfs of the container's own, --yes without names; the host's PID namespace, so the dead creator counts.
    proc = docker_run(
        "--name",
        unique_name("clean-unknown"),
        "--pid=host",
        "--tmpfs",
        "/mnt/shm",
        cmd=["python", "-c", UNKNOWN_AND_KNOWN, "/mnt/shm"],
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    status, *rest = proc.stdout.splitlines()
    doc, left = validate(json.loads("\n".join(rest[:-1]))), rest[-1].split()
    assert status == "0 "
    removed = sorted(e["name"] for e in doc["removed"])
    assert removed[:2] == ["nccl-left01", "sem.mp-left_ovr"] and len(removed) == 3
    assert recognise(removed[2]) == "PyTorch"
    unknown = [
        "psm_5f3a",
        "sem.other",
        "notes.txt",
        "torch_utils.py",
        "nccl-tests.log",
        "torch_1_2_3.py",
        "sem.mp-short",
    ]
    assert left == sorted(unknown + ["torch_1_2_3", "torch_1_2_4"])  # and a link and a directory with segment names
    assert doc["unrecognised"]["count"] == len(unknown)


KILL_AND_CLEAN = """
ready=$(python tests/loaders/running.py --strategy file_system --kill 2>/dev/null)
echo "killed: $?"
for pid in ${ready#ready }; do  # the workers notice their parent is gone within 5 s, and exit
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
done
python -m shmdoctor clean $EXCLUSIVE --format json > /tmp/list.json; echo "list: $?"
python -m shmdoctor clean --yes $EXCLUSIVE --format json > /tmp/yes.json; echo "yes: $?"
echo "left: $(ls /dev/shm | wc -l)"
python -c 'import json; print(json.dumps([json.load(open("/tmp/list.json")), json.load(open("/tmp/yes.json"))]))'
"""


def test_sigkilled_file_system_loader_leak_is_listed_then_freed(images):
    # In the host's PID namespace (--pid=host) a creator's pid can be checked: the dead loader's segments go.
    proc = docker_run(
        "--name",
        unique_name("clean-leak"),
        "--shm-size=256m",
        "--init",
        "--pid=host",
        cmd=["sh", "-c", KILL_AND_CLEAN],
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:4] == ["killed: 137", "list: 0", "yes: 0", "left: 0"], proc.stdout + proc.stderr
    listed, freed = map(validate, json.loads(lines[4]))
    names = [e["name"] for e in listed["leaked"]]
    assert names and all(recognise(n) == "PyTorch" for n in names)
    assert listed["leaked_bytes"] > 0 and listed["used_bytes"] >= listed["leaked_bytes"]
    assert sorted(e["name"] for e in freed["removed"]) == sorted(names)
    assert freed["freed_bytes"] == listed["leaked_bytes"]


def test_in_a_containers_pid_namespace_the_leak_is_kept_and_says_why(images):
    # Its own PID namespace: a peer sharing /dev/shm could have any of these in flight; nothing can prove otherwise.
    proc = docker_run(
        "--name",
        unique_name("clean-leakns"),
        "--shm-size=256m",
        "--init",
        cmd=["sh", "-c", KILL_AND_CLEAN],
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["killed: 137", "list: 0", "yes: 0"] and lines[3] != "left: 0", proc.stdout + proc.stderr
    listed, kept = map(validate, json.loads(lines[4]))
    assert listed["leaked"] == [] and kept["removed"] == [] and kept["freed_bytes"] == 0
    assert kept["kept"] and all(e["kind"] == "PyTorch" and e["why"] == NOT_VISIBLE for e in kept["kept"])


def test_exclusive_frees_the_leak_in_a_containers_own_pid_namespace(images):
    # The same leak, in the container's own PID namespace, and the user says no other container shares its
    # /dev/shm: the dead creator's pid is checked here, and its segments go.
    proc = docker_run(
        "--name",
        unique_name("clean-exclusive"),
        "--shm-size=256m",
        "--init",
        "-e",
        "EXCLUSIVE=--exclusive",
        cmd=["sh", "-c", KILL_AND_CLEAN],
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:4] == ["killed: 137", "list: 0", "yes: 0", "left: 0"], proc.stdout + proc.stderr
    listed, freed = map(validate, json.loads(lines[4]))
    names = [e["name"] for e in listed["leaked"]]
    assert listed["exclusive"] and names and all(recognise(n) == "PyTorch" for n in names)
    assert listed["kept"] == [] and sorted(e["name"] for e in freed["removed"]) == sorted(names)
    assert freed["freed_bytes"] == listed["leaked_bytes"] > 0


@pytest.mark.parametrize(
    "how, words",
    [
        (["--ipc=host"], "shares the host's IPC namespace (--ipc=host)"),
        (["-v", "/dev/shm:/dev/shm"], "is the host's /dev/shm, bound in"),
    ],
)
def test_exclusive_is_refused_where_dev_shm_is_the_hosts(images, how, words):
    proc = docker_run(
        "--name",
        unique_name("clean-exclusive-host"),
        *how,
        cmd=["python", "-m", "shmdoctor", "clean", "--yes", "--exclusive"],
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith("shmdoctor: error: --exclusive: ") and words in line and "nothing was removed" in line


IPC_OWNER = """
import os, time
open(f"/dev/shm/torch_{os.getpid()}_1_0", "wb").write(b"1" * 8192)  # in flight: its creator alive, nobody maps it
print("made", flush=True)
time.sleep(600)
"""


# The creator's pid past the few the peer's own processes will have: pid 1 there must not vouch for it by chance.
OWNER_START = 'for i in $(seq 40); do /bin/true; done; python -c "$0" & wait'


def test_a_peer_containers_segment_in_flight_is_kept(images):
    # --ipc=container:owner shares the owner's /dev/shm, not its PID namespace: the creator is invisible from here.
    owner = unique_name("clean-owner")
    started = subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--rm",
            "--name",
            owner,
            "--network",
            "none",
            "--ipc=shareable",
            "-v",
            f"{REPO}:/src:ro",
            "-w",
            "/src",
            PYTHON,
            "sh",
            "-c",
            OWNER_START,
            IPC_OWNER,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        assert started.returncode == 0, started.stderr
        logs = subprocess.Popen(["docker", "logs", "-f", owner], stdout=subprocess.PIPE, text=True)
        try:
            assert logs.stdout.readline().strip() == "made"
        finally:
            logs.kill()
            logs.wait()
        script = 'python -m shmdoctor clean --yes --format json; echo "left: $(ls /dev/shm)"'
        proc = docker_run(
            "--name", unique_name("clean-peer"), f"--ipc=container:{owner}", cmd=["sh", "-c", script], timeout=120
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        *doc, left = proc.stdout.splitlines()
        doc = validate(json.loads("\n".join(doc)))
        assert doc["removed"] == [] and [(e["kind"], e["why"]) for e in doc["kept"]] == [("PyTorch", NOT_VISIBLE)]
        assert left == f"left: {doc['kept'][0]['name']}" and creator_pid(left[6:]) is not None
    finally:
        subprocess.run(["docker", "rm", "-f", owner], capture_output=True, timeout=60)


OTHER_USER = """
setpriv --reuid=1000 --regid=1000 --clear-groups sh -c '
  head -c 8192 /dev/zero > /dev/shm/nccl-left01
  head -c 8192 /dev/zero > /dev/shm/nccl-held01
  exec 3</dev/shm/nccl-held01; touch /tmp/holding; exec sleep 600' &
while [ ! -e /tmp/holding ]; do sleep 0.05; done
python -m shmdoctor clean $EXCLUSIVE --format json > /tmp/list.json; echo "list: $?"
python -m shmdoctor clean --yes $EXCLUSIVE --format json > /tmp/yes.json; echo "yes: $?"
ls /dev/shm
python -c 'import json; print(json.dumps([json.load(open("/tmp/list.json")), json.load(open("/tmp/yes.json"))]))'
"""


def test_a_containers_root_cleans_what_its_training_user_left(images):
    # Docker drops CAP_SYS_PTRACE and CAP_LEASE: root in the container can neither read uid 1000's descriptors in
    # /proc nor take a lease on its files. The lease is taken as the file's owner; it still finds the holder.
    proc = docker_run("--name", unique_name("clean-user"), "--init", cmd=["sh", "-c", OTHER_USER], timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["list: 0", "yes: 0", "nccl-held01"], proc.stdout + proc.stderr
    listed, freed = map(validate, json.loads(lines[3]))
    assert [e["name"] for e in listed["leaked"]] == ["nccl-left01"]
    assert [(e["name"], e["why"]) for e in listed["kept"]] == [
        ("nccl-held01", "a process /proc did not show has it open or mapped")
    ]
    assert any("(sleep 600): permission denied" in u for u in listed["unreadable"])
    assert [e["name"] for e in freed["removed"]] == ["nccl-left01"] and freed["failed"] == []
