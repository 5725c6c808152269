"""clean: leaked segments are listed, removed only with --yes; held, in-flight and unknown files are never touched.

The host's /dev/shm is shared with other people's tests: the tests here only create, name and remove segments
whose names carry this test process's pid, and --yes on the real /dev/shm is always limited to those names. A
--yes without names runs in a container, on a tmpfs of its own: tests/integration/docker/test_clean.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from shmdoctor.errors import ProbeError, UsageError
from shmdoctor.probe import holders
from shmdoctor.shm import removal
from shmdoctor.shm.segments import Entry, Plan
from tests.helpers import forked_cli, missing, validate

SHM = "/dev/shm"
TAG = str(os.getpid())  # the <random> field of this test's torch_<pid>_<random>_<n> names
SIZE = 5 * 4096


def _nccl(suffix: str) -> str:
    """nccl-XXXXXX with this test's pid in it: five base-36 digits and a letter."""
    n, digits = os.getpid(), ""
    for _ in range(5):
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
    return f"nccl-{digits}{suffix}"


# --- real processes on this machine -------------------------------------------------------------------------------


def _write(path: str, size: int = SIZE) -> None:
    with open(path, "wb") as f:
        f.write(b"\1" * size)


def _dead_creator_segment() -> str:
    """A torch_<pid>_... file made by a process that then died: the shape of a real leftover."""
    code = f"import os; open(f'/dev/shm/torch_{{os.getpid()}}_{TAG}_0', 'wb').write(b'1' * {SIZE})"
    child = subprocess.Popen([sys.executable, "-c", code])
    assert child.wait() == 0
    return f"torch_{child.pid}_{TAG}_0"


HOLD = """
import mmap, os, sys, time
path, how = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDONLY if how == "read" else os.O_RDWR)
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
    """hold(path, 'fd' | 'read' | 'map' | 'unlinked') -> a live process holding the file that way ('read': open
    read-only)."""
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
    """Paths the test creates under /dev/shm (files, or empty directories last), removed at the end whatever
    happened."""
    paths: list[str] = []
    yield paths
    for path in paths:
        if os.path.isdir(path):
            os.rmdir(path)
        elif os.path.lexists(path):
            os.unlink(path)


def _clean(*args: str) -> tuple[int, dict]:
    proc = forked_cli("clean", "--format", "json", *args)
    assert "Traceback" not in proc.stderr
    return proc.returncode, validate(json.loads(proc.stdout))


def test_lists_the_leak_and_changes_nothing_without_yes(made, hold):
    leak = _dead_creator_segment()
    by_map, by_fd, unknown = f"torch_1_{TAG}_1", _nccl("f"), f"sdt-unknown-{TAG}"
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
    held = f"torch_1_{TAG}_2"
    made += [os.path.join(SHM, leak), os.path.join(SHM, held)]
    _write(made[1])
    hold(made[1], "map")

    code, doc = _clean("--yes", leak, held)
    assert code == 0
    assert [e["name"] for e in doc["removed"]] == [leak]
    assert doc["freed_bytes"] == SIZE
    assert not os.path.exists(made[0])
    assert os.path.exists(made[1])


def test_freed_is_the_space_freed_a_hard_linked_name_frees_nothing(made):
    leak, other = _dead_creator_segment(), f"sdt-link-{TAG}"
    made += [os.path.join(SHM, leak), os.path.join(SHM, other)]
    os.link(made[0], made[1])  # the same pages under a name clean does not know

    code, doc = _clean("--yes", leak)
    assert code == 0 and [e["name"] for e in doc["removed"]] == [leak]
    assert doc["removed"][0]["bytes"] == 0 and "other link" in doc["removed"][0]["why"]
    assert doc["freed_bytes"] == 0  # the pages stay with the other name
    assert os.path.getsize(made[1]) == SIZE


def test_two_leaked_names_of_one_file_free_it_once(made):
    first = _dead_creator_segment()
    second = first.rsplit("_", 1)[0] + "_1"  # the same dead creator's next segment name
    made += [os.path.join(SHM, first), os.path.join(SHM, second)]
    os.link(made[0], made[1])

    code, doc = _clean("--yes", first, second)
    assert code == 0 and sorted(e["name"] for e in doc["removed"]) == sorted([first, second])
    assert doc["freed_bytes"] == SIZE  # not twice: the pages went once, with the last name


def test_creator_alive_means_a_batch_in_flight(made, hold):
    # file_system batches queued between a worker and the loop are mapped by nobody: the live creator keeps them.
    code = (
        f"import os, time; open(f'/dev/shm/torch_{{os.getpid()}}_{TAG}_0', 'wb').write(b'1' * {SIZE}); "
        "print('made', flush=True); time.sleep(600)"
    )
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


@pytest.mark.parametrize("where", ["a project directory", "a directory inside a tmpfs"])
def test_a_path_that_is_not_a_tmpfs_mount_point_is_refused(tmp_path, made, where):
    if where == "a project directory":
        d = str(tmp_path)
    else:
        d = os.path.join(SHM, f"sdt-clean-{TAG}")
        os.mkdir(d)
        made.append(d)
    names = ["torch_utils.py", "nccl-tests.log", "torch_1_2_3", "nccl-abc123"]
    for name in names:
        _write(os.path.join(d, name))
    made[:0] = [os.path.join(d, n) for n in names]  # removed before the directory
    proc = forked_cli("clean", "--yes", "--path", d)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"shmdoctor: error: --path {d!r} is not the mount point of a tmpfs: nothing was removed"
    ]
    assert sorted(os.listdir(d)) == sorted(names)


def test_a_name_it_does_not_know_is_refused(made):
    notes = f"sdt-notes-{TAG}.txt"
    made.append(os.path.join(SHM, notes))
    _write(made[0])
    for name in (notes, "torch_utils.py"):
        proc = forked_cli("clean", "--yes", name)
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            f"shmdoctor: error: {name!r} is not a segment shmdoctor knows "
            "(torch_<pid>_<n>_<n>, nccl-XXXXXX, sem.mp-XXXXXXXX, sgl_shm_mq_<pid>_<8 hex>, psm_<8 hex>, plasmaXXXXXX, "
            "triton_python_backend_shm_region_<uuid>); nothing was removed"
        ]
    assert os.path.exists(made[0])


def test_the_lease_keeps_a_segment_proc_did_not_show(made, hold):
    # The last line of defence: even if the scan missed a holder (another PID namespace), the kernel refuses the
    # write lease while any process has the file open or mapped, and the file stays.
    name = f"torch_1_{TAG}_3"
    made.append(os.path.join(SHM, name))
    _write(made[0])
    hold(made[0], "map")
    entry = Entry(name, os.stat(made[0]).st_ino, SIZE, "PyTorch")
    assert removal.remove(SHM, entry) == "a process /proc did not show has it open or mapped"
    assert os.path.exists(made[0])


def test_confirm_keeps_what_a_holder_proc_did_not_show_has_open_even_read_only(made, hold):
    """The plan from /proc said leaked; the kernel knows better. A write lease is refused to a file another process
    has open at all (a read lease only to one open for writing): a reader keeps the file too."""
    names = [f"torch_1_{TAG}_{n}" for n in (5, 6, 7)]
    made += [os.path.join(SHM, n) for n in names]
    for path in made:
        _write(path)
    held_rw, held_ro, free = (Entry(n, os.stat(p).st_ino, SIZE, "PyTorch") for n, p in zip(names, made))
    hold(made[0], "fd")
    hold(made[1], "read")
    gone = Entry(f"torch_1_{TAG}_8", 1, SIZE, "PyTorch")  # listed, then removed by someone else
    plan = removal.confirm(SHM, Plan((held_rw, held_ro, free, gone), (), ()))
    assert plan.leaked == (free,)
    why = "a process /proc did not show has it open or mapped"
    assert [(e.name, e.why) for e in plan.kept] == [(held_rw.name, why), (held_ro.name, why)]
    assert removal.remove(SHM, held_ro) == why and os.path.exists(made[1])


def test_a_segment_replaced_by_a_symlink_is_never_followed(made):
    name = f"torch_1_{TAG}_9"
    path = os.path.join(SHM, name)
    made += [path, path + ".target"]
    _write(path + ".target")
    entry = Entry(name, os.stat(path + ".target").st_ino, SIZE, "PyTorch")  # the inode the link leads to
    os.symlink(path + ".target", path)
    assert removal.remove(SHM, entry) == "Too many levels of symbolic links"  # O_NOFOLLOW: ELOOP, nothing opened
    assert os.path.islink(path) and os.path.exists(path + ".target")


def test_a_path_that_does_not_exist_is_a_usage_error_and_no_dev_shm_a_probe_error(monkeypatch):
    with pytest.raises(UsageError, match="^--path '/nonexistent-sdt' is not a directory$"):
        removal.clean("/nonexistent-sdt")
    monkeypatch.setattr(removal, "SHM", "/nonexistent-sdt")  # a container run with --ipc=none has no /dev/shm
    with pytest.raises(ProbeError, match="^there is no /nonexistent-sdt here"):
        removal.clean("/nonexistent-sdt")


def test_the_lease_refuses_a_replaced_file(made):
    name = f"torch_1_{TAG}_4"
    path = os.path.join(SHM, name)
    made += [path, path + ".old"]
    _write(path)
    entry = Entry(name, os.stat(path).st_ino, SIZE, "PyTorch")
    os.rename(path, path + ".old")  # kept, so its inode cannot be reused by the new file
    _write(path)  # same name, another file: listed earlier, not this one
    assert removal.remove(SHM, entry) == "replaced by another file since it was listed"
    assert os.path.exists(path)


def test_holders_see_unlinked_segments(made, hold):
    path = os.path.join(SHM, f"torch_1_{TAG}_5")
    _write(path)
    made.append(path)
    child = hold(path, "unlinked")
    assert not os.path.exists(path)  # a listing shows nothing...
    found = {h.pid: h for h in holders.scan(SHM).holders}
    [segment] = found[child.pid].segments  # ...the holder's map does
    assert segment.name == f"torch_1_{TAG}_5" and segment.unlinked and segment.bytes == SIZE


# --- a real leak, in a container's own /dev/shm -------------------------------------------------------------------


def test_exclusive_is_refused_on_the_hosts_dev_shm():
    """Where this process shares the host's IPC namespace, /dev/shm is the host's: --exclusive is refused, one line,
    exit 2, nothing listed. (In containers, for real: tests/integration/docker/test_clean.py.)"""
    if os.stat("/proc/self/ns/ipc").st_ino != 4026531839:  # FACTS.md: PROC_IPC_INIT_INO
        missing("not in the host's IPC namespace")
    proc = forked_cli("clean", "--yes", "--exclusive")
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("shmdoctor: error: --exclusive: ") and line.endswith("nothing was removed")


def test_only_the_mount_point_of_a_tmpfs_is_one(made):
    inside = os.path.join(SHM, f"sdt-mount-{TAG}")
    os.mkdir(inside)
    made.append(inside)
    assert removal.tmpfs_mount_point(SHM) is True
    assert removal.tmpfs_mount_point(inside) is False  # on a tmpfs, but not where it is mounted
    assert removal.tmpfs_mount_point("/proc") is False  # a mount point, of proc
    assert removal.tmpfs_mount_point("/nonexistent-sdt") is False
