"""clean: leaked segments are listed, removed only with --yes; held, in-flight and unknown files are never touched.

The host's /dev/shm is shared with other people's tests: the tests here only create, name and remove segments
whose names carry this test process's pid, and --yes on the real /dev/shm is always limited to those names.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import docker_run, run_cli
from shmdoctor.commands import clean
from shmdoctor.probe import holders
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.segments import Entry, File, classify, creator_pid, recognise

SHM = "/dev/shm"
TAG = f"sdt{os.getpid()}"
SIZE = 5 * 4096


# --- the pure part: names and the plan ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, kind", [
    ("torch_123_456789_0", "PyTorch"),
    ("nccl-AbC123", "NCCL"),
    ("sem.mp-k2j3h4", "Python multiprocessing semaphore"),
    ("psm_1a2b3c", None),  # multiprocessing.shared_memory: may outlive every handle by design
    ("sem.postgres", None),
    ("torch_", None),
    ("my_torch_1_2", None),
    ("nccl", None),
    ("random.bin", None),
])
def test_recognise(name, kind):
    assert recognise(name) == kind


def _holders(held: dict[int, list[int]], pids=()) -> Holders:
    """{pid: [inodes]} -> Holders, as a scan would have found them."""
    return Holders(
        tuple(Holder(pid, "python train.py", tuple(Segment(i, f"seg{i}", 4096, True) for i in inodes))
              for pid, inodes in held.items()),
        pids=frozenset(pids),
    )


@pytest.mark.parametrize("name, held, alive, visible, expect", [
    ("torch_99_1_0", {}, (), True, "leaked"),
    ("torch_99_1_0", {500: [1]}, (500,), True, "kept"),  # mapped by a live process
    ("torch_99_1_0", {}, (99,), True, "kept"),  # its creator is alive: a file_system batch in flight
    ("torch_99_1_0", {}, (), False, "kept"),  # creators may live where this PID namespace cannot look
    ("nccl-x1y2z3", {}, (), False, "leaked"),  # no creator in the name: holding alone decides
    ("nccl-x1y2z3", {7: [1]}, (7,), True, "kept"),
    ("sem.mp-abc", {}, (), True, "leaked"),
    ("psm_abc", {}, (), True, "unrecognised"),
    ("core.1234", {}, (), True, "unrecognised"),
])
def test_classify(name, held, alive, visible, expect):
    plan = classify([File(name, 1, 8192)], _holders(held, alive), creators_visible=visible)
    got = {"leaked": plan.leaked, "kept": plan.kept, "unrecognised": plan.unrecognised}
    assert [x.name for x in got[expect]] == [name]
    assert sum(len(v) for v in got.values()) == 1


def test_creator_pid():
    assert creator_pid("torch_4242_17_3") == 4242
    assert creator_pid("nccl-123") is None


# --- real processes on this machine -------------------------------------------------------------------------------

def _write(path: str, size: int = SIZE) -> None:
    with open(path, "wb") as f:
        f.write(b"\1" * size)


def _dead_creator_segment(directory: str = SHM) -> str:
    """A torch_<pid>_... file made by a process that then died: the shape of a real leftover."""
    code = f"import os; open(os.path.join({directory!r}, f'torch_{{os.getpid()}}_{TAG}_0'), 'wb').write(b'1' * {SIZE})"
    child = subprocess.Popen([sys.executable, "-c", code])
    assert child.wait() == 0
    return f"torch_{child.pid}_{TAG}_0"


HOLD = """
import mmap, os, sys, time
path, how = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR)
if how in ("map", "unlinked"):
    m = mmap.mmap(fd, os.fstat(fd).st_size)
    os.close(fd)  # held by the map alone, as PyTorch's file_system strategy does
if how == "unlinked":
    os.unlink(path)  # as the default file_descriptor strategy does
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def hold():
    """hold(path, 'fd' | 'map' | 'unlinked') -> a live process holding the file that way."""
    children = []

    def start(path: str, how: str) -> subprocess.Popen:
        child = subprocess.Popen([sys.executable, "-c", HOLD, path, how], stdout=subprocess.PIPE, text=True)
        children.append(child)
        assert child.stdout.readline().strip() == "held"
        return child

    yield start
    for child in children:
        child.kill()
        child.wait()


@pytest.fixture
def made():
    """Paths the test creates under /dev/shm, removed at the end whatever happened."""
    paths: list[str] = []
    yield paths
    for path in paths:
        if os.path.lexists(path):
            os.unlink(path)


def _clean(*args: str) -> tuple[int, dict]:
    proc = run_cli("clean", "--format", "json", *args)
    assert "Traceback" not in proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_lists_the_leak_and_changes_nothing_without_yes(made, hold):
    leak = _dead_creator_segment()
    by_map, by_fd, unknown = f"torch_1_{TAG}_map", f"nccl-{TAG}fd", f"sdt-unknown-{TAG}"
    made += [os.path.join(SHM, n) for n in (leak, by_map, by_fd, unknown)]
    for path in made[1:]:
        _write(path)
    map_holder = hold(os.path.join(SHM, by_map), "map")
    fd_holder = hold(os.path.join(SHM, by_fd), "fd")

    code, doc = _clean()
    assert code == 0
    leaked = {e["name"]: e for e in doc["leaked"]}
    kept = {e["name"]: e for e in doc["kept"]}
    assert leaked[leak]["bytes"] == SIZE and leaked[leak]["kind"] == "PyTorch"
    assert kept[by_map]["why"] == f"held by pid {map_holder.pid}"
    assert kept[by_fd]["why"] == f"held by pid {fd_holder.pid}"
    assert unknown not in leaked and unknown not in kept
    assert doc["removed"] is None and doc["freed_bytes"] == 0
    assert all(os.path.exists(p) for p in made)


def test_yes_removes_the_leak_only(made, hold):
    leak = _dead_creator_segment()
    held = f"torch_1_{TAG}_held"
    made += [os.path.join(SHM, leak), os.path.join(SHM, held)]
    _write(made[1])
    hold(made[1], "map")

    code, doc = _clean("--yes", leak, held)
    assert code == 0
    assert [e["name"] for e in doc["removed"]] == [leak]
    assert doc["freed_bytes"] == SIZE
    assert not os.path.exists(made[0])
    assert os.path.exists(made[1])


def test_creator_alive_means_a_batch_in_flight(made, hold):
    # file_system batches queued between a worker and the loop are mapped by nobody: the live creator keeps them.
    code = (f"import os, time; open(f'/dev/shm/torch_{{os.getpid()}}_{TAG}_0', 'wb').write(b'1' * {SIZE}); "
            "print('made', flush=True); time.sleep(600)")
    creator = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert creator.stdout.readline().strip() == "made"
        name = f"torch_{creator.pid}_{TAG}_0"
        made.append(os.path.join(SHM, name))
        rc, doc = _clean("--yes", name)
        assert rc == 0 and doc["removed"] == []
        assert [e["why"] for e in doc["kept"]] == [f"its creator, pid {creator.pid}, is alive (a batch in flight)"]
        assert os.path.exists(made[0])
    finally:
        creator.kill()
        creator.wait()


def test_yes_never_touches_what_it_does_not_recognise(tmp_path):
    d = str(tmp_path)
    leak = _dead_creator_segment(d)
    for name in ("psm_5f3a", "sem.other", "notes.txt", "nccl-leftover"):
        _write(os.path.join(d, name))
    os.symlink("/etc/hostname", os.path.join(d, "torch_1_2_link"))
    os.mkdir(os.path.join(d, "torch_1_2_dir"))

    rc, doc = _clean("--yes", "--path", d)
    assert rc == 0
    assert sorted(e["name"] for e in doc["removed"]) == sorted([leak, "nccl-leftover"])
    assert sorted(os.listdir(d)) == ["notes.txt", "psm_5f3a", "sem.other", "torch_1_2_dir", "torch_1_2_link"]
    assert doc["unrecognised"]["count"] == 3


def test_a_name_it_does_not_know_is_refused(tmp_path):
    _write(os.path.join(tmp_path, "notes.txt"))
    proc = run_cli("clean", "--yes", "--path", str(tmp_path), "notes.txt")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "shmdoctor: error: 'notes.txt' is not a segment shmdoctor knows (torch_*, nccl-*, sem.mp-*); nothing was removed"
    ]
    assert os.path.exists(os.path.join(tmp_path, "notes.txt"))


def test_the_lease_keeps_a_segment_proc_did_not_show(tmp_path, hold):
    # The last line of defence: even if the scan missed a holder (another PID namespace), the kernel refuses the
    # write lease while any process has the file open or mapped, and the file stays.
    path = os.path.join(tmp_path, "torch_1_2_3")
    _write(path)
    hold(path, "map")
    entry = Entry("torch_1_2_3", os.stat(path).st_ino, SIZE, "PyTorch")
    assert clean.remove(str(tmp_path), entry) == "a process /proc did not show has it open or mapped"
    assert os.path.exists(path)


def test_the_lease_refuses_a_replaced_file(tmp_path):
    path = os.path.join(tmp_path, "torch_1_2_3")
    _write(path)
    entry = Entry("torch_1_2_3", os.stat(path).st_ino, SIZE, "PyTorch")
    os.rename(path, path + ".old")  # kept, so its inode cannot be reused by the new file
    _write(path)  # same name, another file: listed earlier, not this one
    assert clean.remove(str(tmp_path), entry) == "replaced by another file since it was listed"
    assert os.path.exists(path)


def test_holders_see_unlinked_segments(made, hold):
    path = os.path.join(SHM, f"torch_1_{TAG}_gone")
    _write(path)
    made.append(path)
    child = hold(path, "unlinked")
    assert not os.path.exists(path)  # a listing shows nothing...
    found = {h.pid: h for h in holders.scan(SHM).holders}
    [segment] = found[child.pid].segments  # ...the holder's map does
    assert segment.name == f"torch_1_{TAG}_gone" and segment.unlinked and segment.bytes == SIZE


# --- a real leak, in a container's own /dev/shm -------------------------------------------------------------------

KILL_AND_CLEAN = """
ready=$(python tests/loaders/running.py --strategy file_system --kill 2>/dev/null)
echo "killed: $?"
for pid in ${ready#ready }; do  # the workers notice their parent is gone within 5 s, and exit
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
done
python -m shmdoctor clean --format json > /tmp/list.json; echo "list: $?"
python -m shmdoctor clean --yes --format json > /tmp/yes.json; echo "yes: $?"
echo "left: $(ls /dev/shm | wc -l)"
python -c 'import json; print(json.dumps([json.load(open("/tmp/list.json")), json.load(open("/tmp/yes.json"))]))'
"""


@pytest.mark.docker
@pytest.mark.torch
def test_sigkilled_file_system_loader_leak_is_listed_then_freed(images):
    proc = docker_run("--name", f"sdt-clean-leak-{os.getpid()}", "--shm-size=256m", "--init",
                      cmd=["sh", "-c", KILL_AND_CLEAN], timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:4] == ["killed: 137", "list: 0", "yes: 0", "left: 0"], proc.stdout + proc.stderr
    listed, freed = json.loads(lines[4])
    names = [e["name"] for e in listed["leaked"]]
    assert names and all(n.startswith("torch_") for n in names)
    assert listed["leaked_bytes"] > 0 and listed["used_bytes"] >= listed["leaked_bytes"]
    assert sorted(e["name"] for e in freed["removed"]) == sorted(names)
    assert freed["freed_bytes"] == listed["leaked_bytes"]


OTHER_USER = """
setpriv --reuid=1000 --regid=1000 --clear-groups sh -c '
  head -c 8192 /dev/zero > /dev/shm/torch_99999_1_0
  head -c 8192 /dev/zero > /dev/shm/nccl-held
  exec 3</dev/shm/nccl-held; touch /tmp/holding; exec sleep 600' &
while [ ! -e /tmp/holding ]; do sleep 0.05; done
python -m shmdoctor clean --format json > /tmp/list.json; echo "list: $?"
python -m shmdoctor clean --yes --format json > /tmp/yes.json; echo "yes: $?"
ls /dev/shm
python -c 'import json; print(json.dumps([json.load(open("/tmp/list.json")), json.load(open("/tmp/yes.json"))]))'
"""


@pytest.mark.docker
def test_a_containers_root_cleans_what_its_training_user_left(images):
    # Docker drops CAP_SYS_PTRACE and CAP_LEASE: root in the container can neither read uid 1000's descriptors in
    # /proc nor take a lease on its files. The lease is taken as the file's owner; it still finds the holder.
    proc = docker_run("--name", f"sdt-clean-user-{os.getpid()}", "--init", cmd=["sh", "-c", OTHER_USER], timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:3] == ["list: 0", "yes: 0", "nccl-held"], proc.stdout + proc.stderr
    listed, freed = json.loads(lines[3])
    assert [e["name"] for e in listed["leaked"]] == ["torch_99999_1_0"]
    assert [(e["name"], e["why"]) for e in listed["kept"]] == [
        ("nccl-held", "a process /proc did not show has it open or mapped")
    ]
    assert any("(sleep 600): permission denied" in u for u in listed["unreadable"])
    assert [e["name"] for e in freed["removed"]] == ["torch_99999_1_0"] and freed["failed"] == []
