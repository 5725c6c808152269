"""clean: leaked segments are listed, removed only with --yes; held, in-flight and unknown files are never touched.

The host's /dev/shm is shared with other people's tests: the tests here only create, name and remove segments
whose names carry this test process's pid, and --yes on the real /dev/shm is always limited to those names. A
--yes without names runs in a container, on a tmpfs of its own: tests/integration/docker/test_clean.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
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


def test_the_dry_run_counts_a_file_of_two_leaked_names_once_and_one_a_name_keeps_not_at_all(made):
    first = _dead_creator_segment()
    second = first.rsplit("_", 1)[0] + "_1"
    kept = f"sdt-link-{TAG}"
    made += [os.path.join(SHM, n) for n in (first, second, kept)]
    os.link(made[0], made[1])
    code, doc = _clean(first, second)
    assert code == 0 and sorted(e["name"] for e in doc["leaked"]) == sorted([first, second])
    assert doc["leaked_bytes"] == SIZE  # what --yes frees (the test above): once
    os.link(made[0], made[2])  # a third name clean does not know: removing the two frees nothing
    code, doc = _clean(first, second)
    assert code == 0 and len(doc["leaked"]) == 2 and doc["leaked_bytes"] == 0
    text = forked_cli("clean", first, second).stdout
    assert "Leaked: 2 segments, 0 B, that no process holds" in text and "would free 0 B" in text


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


# --- what clean decides at each step, on real files -----------------------------------------------------------------


def test_a_cleaned_document_is_frozen_and_its_exit_code_says_interrupted_then_failed():
    doc = removal.Cleaned(directory=SHM, size_bytes=0, used_bytes=0, plan=Plan((), (), ()), yes=True, exclusive=False)
    assert doc.interrupted is False and doc.exit_code == 0
    failed = ((Entry(f"torch_1_{TAG}_0", 1, SIZE, "PyTorch"), "Permission denied"),)
    assert dataclasses.replace(doc, failed=failed).exit_code == 1
    assert dataclasses.replace(doc, failed=failed, interrupted=True).exit_code == 130
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.yes = False  # type: ignore[misc]


def test_the_listing_has_regular_files_only_never_through_a_symlink(tmp_path):
    (tmp_path / "torch_1_2_3").write_bytes(b"x" * 8192)
    os.symlink(tmp_path / "torch_1_2_3", tmp_path / "torch_1_2_4")
    os.mkdir(tmp_path / "nccl-abc123")
    assert [(f.name, f.bytes) for f in removal.list_files(str(tmp_path))] == [("torch_1_2_3", 8192)]
    with pytest.raises(ProbeError, match=f"^cannot list {tmp_path}/gone: No such file or directory$"):
        removal.list_files(str(tmp_path / "gone"))


def test_a_file_removed_between_the_listing_and_its_stat_is_left_out(tmp_path, monkeypatch):
    for n in (3, 4, 5):
        (tmp_path / f"torch_1_2_{n}").write_bytes(b"x" * 4096)
    scandir = os.scandir

    def listed_then_one_gone(path):
        entries = sorted(scandir(path), key=lambda e: e.name)
        os.unlink(entries[0].path)  # another cleaner took the first one meanwhile
        return iter(entries)

    monkeypatch.setattr(os, "scandir", listed_then_one_gone)
    assert sorted(f.name for f in removal.list_files(str(tmp_path))) == ["torch_1_2_4", "torch_1_2_5"]


def _four_inodes(made: list[str]) -> list[str]:
    """Four files under /dev/shm, by inode, lowest first: a name can be replaced by a file of a lower or higher one."""
    paths = [os.path.join(SHM, f"sdt-inode-{TAG}-{n}") for n in range(4)]
    made += paths
    for path in paths:
        _write(path)
    return sorted(paths, key=lambda p: os.stat(p).st_ino)


def test_confirm_keeps_the_listing_where_the_name_is_now_another_file_held_or_not(made, hold):
    """The plan is about the files /proc was asked about; a name that now leads to another file (renamed over it,
    held by someone or not, or a symlink) stays leaked as listed: remove will find it replaced and unlink nothing."""
    lower, first, second, higher = _four_inodes(made)
    entries = []
    for n, listed, new in ((10, first, lower), (11, second, higher)):
        path = os.path.join(SHM, f"torch_1_{TAG}_{n}")
        made.append(path)
        entries.append(Entry(os.path.basename(path), os.stat(listed).st_ino, SIZE, "PyTorch"))
        os.rename(new, path)  # the listed file stays under its own name: its inode is not reused
        hold(path, "map")
    for n, how in ((12, "file"), (13, "symlink")):
        path = os.path.join(SHM, f"torch_1_{TAG}_{n}")
        made += [path, path + ".old"]
        _write(path)
        entries.append(Entry(os.path.basename(path), os.stat(path).st_ino, SIZE, "PyTorch"))
        os.rename(path, path + ".old")
        if how == "file":
            _write(path)
        else:
            os.symlink(path + ".old", path)
    plan = removal.confirm(SHM, Plan(tuple(entries), (), ()))
    assert plan.leaked == tuple(entries) and plan.kept == ()


def test_remove_looks_at_the_name_again_under_the_lease_and_unlinks_only_the_file_it_leased(made, monkeypatch):
    """Between the lease and the unlink another process may rename a file over the name (of a lower or a higher
    inode) or remove it: the name's file is looked at again, and nothing else is unlinked."""
    lower, first, second, higher = _four_inodes(made)
    changes = {first: lambda: os.rename(lower, first), second: lambda: os.rename(higher, second)}
    gone = os.path.join(SHM, f"torch_1_{TAG}_14")
    made.append(gone)
    _write(gone)
    changes[gone] = lambda: os.unlink(gone)
    entries = {path: Entry(os.path.basename(path), os.stat(path).st_ino, SIZE, "PyTorch") for path in changes}
    lstat = os.lstat

    def meanwhile(path, *args, **kwargs):
        changes.pop(path, lambda: None)()
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", meanwhile)
    assert [removal.remove(SHM, entries[path]) for path in (first, second, gone)] == [
        "replaced by another file since it was listed",
        "replaced by another file since it was listed",
        "No such file or directory",
    ]
    monkeypatch.undo()
    assert os.stat(first).st_ino != entries[first].inode and os.path.exists(second)


@pytest.mark.parametrize("name", ["../torch_1_2_3", "sub/nccl-abc123", ".", ".."])
def test_a_name_that_is_a_path_is_refused_as_one(name):
    with pytest.raises(UsageError, match="give segment names as listed in the directory, not paths$"):
        removal.clean(SHM, (name,))


def test_dev_shm_is_told_by_its_value_and_a_path_sorting_before_it_is_judged_as_any_other(monkeypatch):
    with pytest.raises(UsageError, match="^--path '/dev/no-such-dir-sdt' is not a directory$"):
        removal.clean("/dev/no-such-dir-sdt")
    with pytest.raises(UsageError, match="^--path '/' is not the mount point of a tmpfs: nothing was removed$"):
        removal.clean("/")
    monkeypatch.setattr(removal, "SHM", "/nonexistent-sdt")
    typed = "/".join(["", "nonexistent-sdt"])  # the user's string, not the module's own object
    with pytest.raises(ProbeError, match="^there is no /nonexistent-sdt here"):
        removal.clean(typed)


def test_clean_by_default_lists_and_removes_nothing(made):
    leak = _dead_creator_segment()
    made.append(os.path.join(SHM, leak))
    doc = removal.clean(SHM, (leak,))
    assert doc.yes is False and doc.exclusive is False
    assert [e.name for e in doc.plan.leaked] == [leak] and doc.removed == () and doc.freed_bytes == 0
    assert os.path.exists(made[0])


def test_ctrl_c_lands_between_two_removals(made, monkeypatch):
    leaks = [_dead_creator_segment() for _ in range(2)]
    made += [os.path.join(SHM, n) for n in leaks]
    unlink = os.unlink

    def unlink_then_ctrl_c(path, *args, **kwargs):
        unlink(path, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # pending until this removal is complete

    monkeypatch.setattr(os, "unlink", unlink_then_ctrl_c)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, whatever a test before left
    try:
        doc = removal.clean(SHM, tuple(leaks), yes=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.undo()
    assert doc.interrupted is True and doc.exit_code == 130
    [removed] = doc.removed
    assert removed.bytes == SIZE and [os.path.exists(p) for p in made] == [n != removed.name for n in leaks]


# --- without the capabilities Docker drops, and in namespaces of its own (root: CI runs as root) --------------------

LEASE = """
import json, os, sys
from shmdoctor.shm import removal
from shmdoctor.shm.segments import Entry
directory, name, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
if uid:  # another user than root and than the file's owner
    os.setgroups([]), os.setresgid(uid, uid, uid), os.setresuid(uid, uid, uid)
path = os.path.join(directory, name)
outcome = removal.remove(directory, Entry(name, os.stat(path).st_ino, 4096, "PyTorch"))
print(json.dumps([outcome if isinstance(outcome, str) else "removed", os.geteuid()]))
"""


@pytest.mark.parametrize(
    "drop, uid, expected",
    [
        ("-lease", 0, ["removed", 0]),  # Docker's root: the lease taken as the file's owner, root again after
        ("-lease,-setuid", 0, ["cannot make sure nobody holds it (Operation not permitted)", 0]),
        ("", 4321, ["cannot make sure nobody holds it (Permission denied)", 4321]),  # not the owner, not root
    ],
)
def test_root_without_cap_lease_takes_the_lease_as_the_files_owner(made, drop, uid, expected):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        missing("root and setpriv (util-linux): a file of another owner, capabilities dropped")
    name = f"torch_1_{TAG}_20"
    made.append(os.path.join(SHM, name))
    _write(made[0])
    os.chown(made[0], 1, 1)  # daemon's
    command = [sys.executable, "-c", LEASE, SHM, name, str(uid)]
    proc = subprocess.run(["setpriv", f"--bounding-set={drop}", *command] if drop else command, capture_output=True)
    assert json.loads(proc.stdout) == expected, proc.stderr
    assert os.path.exists(made[0]) is (expected[0] != "removed")


NAMESPACES = """
import json, os, subprocess, sys
from shmdoctor.shm import removal
d = sys.argv[1]
seen = {"creators visible": removal.creators_visible()}
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sdt", d], check=True)
seen["a tmpfs"] = [removal.tmpfs_mount_point(d), removal.clean(d).size_bytes]
while subprocess.run(["umount", "/dev/shm"], stderr=subprocess.DEVNULL).returncode == 0:
    pass  # every tmpfs stacked there: /dev/shm is a folder of /dev now
seen["/dev/shm, a folder"] = [removal.tmpfs_mount_point("/dev/shm"), removal.clean("/dev/shm").directory]
subprocess.run(["mount", "-t", "tmpfs", "sdt", "/proc"], check=True)
os.mkdir("/proc/self")
seen["no /proc"] = [removal.creators_visible(), removal.tmpfs_mount_point(d)]
xfs = f"36 35 98:0 / {d} rw,noatime master:1 - xfs /dev/sda1 rw"  # a mount point, of another file system
for what, text in (("garbage", "not mountinfo"), ("xfs", xfs)):
    open("/proc/self/mountinfo", "w").write(text + "\\n")
    seen[what] = removal.tmpfs_mount_point(d)
print(json.dumps(seen))
"""


def test_in_a_pid_and_mount_namespace_of_its_own(tmp_path):
    """A new PID namespace: creators are not visible. A tmpfs mounted at a folder is one to clean, and /dev/shm is
    cleaned even where it is not a mount point; with no /proc, or a mountinfo that cannot be read or says xfs, no
    folder is a tmpfs's mount point and no creator is visible."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        missing("root and unshare (util-linux): a PID and a mount namespace")
    command = ["unshare", "--mount", "--pid", "--fork", "--mount-proc", sys.executable, "-c", NAMESPACES]
    proc = subprocess.run([*command, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout or "null") == {
        "creators visible": False,
        "a tmpfs": [True, 1024 * 1024],
        "/dev/shm, a folder": [False, "/dev/shm"],
        "no /proc": [False, False],
        "garbage": False,
        "xfs": False,
    }, proc.stderr
