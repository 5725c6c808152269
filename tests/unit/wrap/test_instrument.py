"""run's instrumentation of its child: the sitecustomize's pieces (standard library only, tested without torch), a
real Python child started with the environment run gives it, and the channel read back as facts."""

import json
import os
import subprocess
import sys

import pytest

from shmdoctor.loader import combined_requirement, loader_config
from shmdoctor.wrap import instrument
from shmdoctor.wrap.instrument import SeenLoader

sys.path.insert(0, instrument.SITE)
import _shmdoctor_site as site  # noqa: E402  (the child's module, as the child imports it)

sys.path.remove(instrument.SITE)
MiB = 2**20


# The batch default_collate makes: one stacked tensor per field, one page-rounded segment each.


def test_numbers_become_one_int64_or_float64_tensor_a_field():
    assert site.collated_bytes([1, 2, 3]) == (4096, 1)  # 24 B, one page
    assert site.collated_bytes([0.5] * 1000) == (8192, 1)  # 8000 B, two pages
    assert site.collated_bytes([True] * 5000) == (8192, 1)  # bool: one byte each, 5000 B


def test_mappings_and_sequences_are_collated_field_by_field_and_strings_stay_in_the_pipe():
    samples = [{"label": i, "pair": (1.0, 2), "name": "x"} for i in range(3)]
    assert site.collated_bytes(samples) == (3 * 4096, 3)  # label, pair[0], pair[1]; the names are a list


def test_nesting_past_the_bound_is_not_walked():
    deep: object = 1
    for _ in range(site.MAX_DEPTH + 5):
        deep = [deep]
    assert site.collated_bytes([deep, deep]) == (0, 0)


def test_record_appends_one_json_line_per_call_to_the_process_file(tmp_path, monkeypatch):
    monkeypatch.setenv(site.CHANNEL, str(tmp_path))
    site.record("loader", batch_size=100)
    site.record("batch", bytes=4096)
    lines = (tmp_path / f"{os.getpid()}.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [
        {"kind": "loader", "pid": os.getpid(), "batch_size": 100},
        {"kind": "batch", "pid": os.getpid(), "bytes": 4096},
    ]


def test_record_is_silent_without_a_channel_or_when_it_cannot_write(tmp_path, monkeypatch):
    monkeypatch.delenv(site.CHANNEL, raising=False)
    site.record("loader")  # no channel: nothing, no error
    monkeypatch.setenv(site.CHANNEL, str(tmp_path / "gone"))
    site.record("loader")  # the folder is gone: nothing, no error
    assert list(tmp_path.iterdir()) == []


def test_install_waits_for_torchs_dataloader_only_where_run_asked(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, site.TARGET, raising=False)  # another test may have imported torch
    monkeypatch.delenv(site.CHANNEL, raising=False)
    site.install()
    assert not any(isinstance(f, site.Finder) for f in sys.meta_path)
    monkeypatch.setenv(site.CHANNEL, "/nonexistent")
    site.install()
    assert isinstance(sys.meta_path[0], site.Finder)
    assert sys.meta_path[0].find_spec("json") is None  # any other module: not its business


# A real child with the environment run gives it.


def child(tmp_path, code: str, pythonpath: str | None = None, instrumented: bool = True):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", instrument.CHANNEL)}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    if instrumented:
        env = instrument.environment(str(tmp_path), env)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)


def test_the_child_sees_its_own_sys_path_and_pythonpath_kept(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    code = "import sys, os; print([p for p in sys.path if 'site' in p.split(os.sep)[-1:]]); print(sys.path[1])"
    plain, wrapped = child(tmp_path, code, str(own), False), child(tmp_path, code, str(own))
    assert wrapped.returncode == plain.returncode == 0, wrapped.stderr
    assert wrapped.stdout == plain.stdout and wrapped.stderr == plain.stderr == b""
    assert plain.stdout.splitlines()[1].decode() == str(own)  # the child's PYTHONPATH entry, where it was


def test_a_sitecustomize_it_hides_still_runs_and_its_error_reads_as_without_us(tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import builtins\nbuiltins.SDT_MARK = 'ran'\n")
    code = "import builtins, sitecustomize; print(builtins.SDT_MARK, sitecustomize.__file__)"
    wrapped = child(tmp_path, code, str(own))
    assert wrapped.returncode == 0 and wrapped.stdout.decode().split() == ["ran", str(own / "sitecustomize.py")]
    (own / "sitecustomize.py").write_text("raise RuntimeError('broken site')\n")
    plain, wrapped = child(tmp_path, "print('go')", str(own), False), child(tmp_path, "print('go')", str(own))
    assert b"broken site" in plain.stderr
    assert (wrapped.returncode, wrapped.stdout, wrapped.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_python_that_never_imports_torch_leaves_nothing(tmp_path):
    proc = child(tmp_path, "import json, sys; sys.exit(3)")
    assert proc.returncode == 3 and proc.stdout == proc.stderr == b""
    assert list(tmp_path.iterdir()) == []


def test_the_environment_keeps_the_childs_pythonpath_after_the_site():
    env = instrument.environment("/c", {"PYTHONPATH": "/a:/b", "HOME": "/h"})
    assert env == {"PYTHONPATH": f"{instrument.SITE}:/a:/b", "HOME": "/h", instrument.CHANNEL: "/c"}
    assert instrument.environment("/c", {})["PYTHONPATH"] == instrument.SITE


# The channel read back: bounded, validated.


def write(folder, pid: int, *records) -> None:
    with open(folder / f"{pid}.jsonl", "a") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps({"pid": pid, **r})) + "\n")


LOADER = dict(kind="loader", loader="10:1", batch_size=100, num_workers=4, prefetch_factor=2, pin_memory=False,
              persistent_workers=False)  # fmt: skip


def test_read_joins_each_loader_with_the_biggest_batch_its_workers_measured(tmp_path):
    write(tmp_path, 10, {"kind": "torch", "version": "2.13"}, {**LOADER, "rank": 0, "local_rank": 0})
    write(tmp_path, 11, {"kind": "batch", "loader": "10:1", "bytes": 100 * MiB, "segments": 1, "samples": 100})
    write(tmp_path, 12, {"kind": "batch", "loader": "10:1", "bytes": 50 * MiB, "segments": 1, "samples": 50})
    seen = instrument.read(str(tmp_path))
    assert (seen.pids, seen.torch_processes, seen.errors) == ({10, 11, 12}, 1, ())
    assert seen.loaders == (
        SeenLoader(10, 100, 4, 2, False, False, rank=0, local_rank=0, batch_bytes=100 * MiB, segments=1,
                   workers_measured=2),
    )  # fmt: skip


def test_read_leaves_out_what_the_hook_never_writes(tmp_path):
    write(
        tmp_path, 10, "not json", "[1, 2]", '{"pid": "x"}', "x" * 10_000,
        {**LOADER, "num_workers": -1}, {**LOADER, "loader": "10:2", "num_workers": True},
        {"kind": "batch", "loader": "10:1", "bytes": "big"}, {"kind": "error", "where": "patch", "error": "E: boom"},
    )  # fmt: skip
    seen = instrument.read(str(tmp_path))
    assert seen.loaders == () and seen.errors == ("patch: E: boom",)
    assert instrument.read(str(tmp_path / "gone")).pids == frozenset()


def test_the_need_of_two_ranks_with_the_same_loader_counts_both(tmp_path):
    for pid in (10, 20):
        write(tmp_path, pid, {**LOADER, "loader": f"{pid}:1"})
        write(tmp_path, pid + 1, {"kind": "batch", "loader": f"{pid}:1", "bytes": 100 * MiB, "segments": 1})
    need, notes = instrument.requirement(instrument.read(str(tmp_path)).loaders)
    assert need is not None and notes == []
    assert need.bytes == 2 * (2 * 4 + 1) * 100 * MiB and need.ranks == 2


def test_a_batch_under_a_byte_a_sample_is_still_a_measured_loader(tmp_path):
    """8192 samples in one 4 KiB tensor (a collate of its own): no sample size to take from it, and the loader counts
    (it was refused: 'sample_bytes: must be greater than zero, got 0'), beside rank 10's seed loader."""
    write(tmp_path, 10, LOADER)
    write(tmp_path, 11, {"kind": "batch", "loader": "10:1", "bytes": 100 * MiB, "segments": 1})
    write(tmp_path, 20, {**LOADER, "loader": "20:1", "batch_size": 8192})
    write(tmp_path, 21, {"kind": "batch", "loader": "20:1", "bytes": 4096, "segments": 1})
    need, notes = instrument.requirement(instrument.read(str(tmp_path)).loaders)
    assert need is not None and notes == []
    assert need.bytes == (2 * 4 + 1) * (100 * MiB + 4096) and need.ranks == 2
    assert [n.bytes for n in need.breakdown] == [9 * 100 * MiB, 9 * 4096]


def test_a_loader_whose_workers_never_measured_is_said_and_left_out(tmp_path):
    write(tmp_path, 10, LOADER)
    need, notes = instrument.requirement(instrument.read(str(tmp_path)).loaders)
    assert need is None and notes == ["a loader of pid 10 (num_workers=4): no worker measured a batch"]


@pytest.mark.parametrize("pin", [False, True])
def test_different_loaders_at_once_add_up(pin):
    train = loader_config(batch_size=100, num_workers=4, batch_bytes=100 * MiB, pin_memory=pin)
    val = loader_config(batch_size=50, num_workers=2, batch_bytes=50 * MiB, pin_memory=pin)
    need = combined_requirement([train, val])
    held = 0 if pin else 1
    assert need.bytes == (8 + held) * 100 * MiB + (4 + held) * 50 * MiB
    assert need.loader == train and len(need.breakdown) == 2


# sys.stderr copied where run leaves its terminal to the child: a real child, its stream untouched, the copy read back.
WRITES = """
import os, sys
sys.stderr.write("before the fork\\n")
if os.fork() == 0:
    print("from the worker", file=sys.stderr)
    os._exit(0)
os.wait()
print(type(sys.stderr).__name__, sys.stderr.fileno(), sys.stderr.encoding, flush=True)
raise RuntimeError("the last words")
"""


def test_sys_stderr_is_copied_per_process_and_the_stream_is_left_as_it_was(tmp_path):
    env = instrument.environment(str(tmp_path), {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, stderr=True)
    proc = subprocess.run([sys.executable, "-c", WRITES], env=env, capture_output=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == b"StderrCopy 2 utf-8\n"  # its descriptor and encoding, delegated
    assert proc.stderr.startswith(b"before the fork\nfrom the worker\nTraceback")  # the stream got every byte
    text, total = instrument.stderr_copy(str(tmp_path), 2**20)
    assert total == len(proc.stderr) and text.endswith(b"RuntimeError: the last words\n")
    # process by process, the one that wrote last at the end
    assert b"from the worker\n" in text and text.index(b"from the worker") < text.index(b"before the fork")
    assert len(list(tmp_path.glob("*.err"))) == 2


def test_without_the_variable_sys_stderr_is_not_wrapped(tmp_path):
    proc = child(tmp_path, "import sys; print(type(sys.stderr).__name__)")
    assert proc.stdout == b"TextIOWrapper\n" and not list(tmp_path.glob("*.err"))


def test_the_copy_is_read_back_bounded_last_writer_last_and_never_waits(tmp_path):
    (tmp_path / "10.err.old").write_bytes(b"a" * 100)
    (tmp_path / "10.err").write_bytes(b"b" * 100)
    os.utime(tmp_path / "10.err", ns=(1, 1))
    os.utime(tmp_path / "10.err.old", ns=(1, 1))
    (tmp_path / "20.err").write_bytes(b"the end\n")  # written last
    os.mkfifo(tmp_path / "30.err")  # a FIFO the child made: never opened
    (tmp_path / "40.err").symlink_to("/etc/passwd")  # a link: never followed
    assert instrument.stderr_copy(str(tmp_path), 1000) == (b"a" * 100 + b"b" * 100 + b"the end\n", 208)
    assert instrument.stderr_copy(str(tmp_path), 58) == (b"b" * 50 + b"the end\n", 208)  # the last 58 bytes


def test_a_process_that_writes_past_the_cap_keeps_its_last_two_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(site, "STDERR_CAP", 10)

    class Sink:
        def write(self, text):
            return len(text)

    copy = site.StderrCopy(Sink(), str(tmp_path))
    for i in range(7):
        copy.write(f"line {i}\n")  # 7 bytes each: a part holds one
    os.close(copy._fd)
    pid = os.getpid()
    assert (tmp_path / f"{pid}.err").read_text() == "line 6\n"
    assert (tmp_path / f"{pid}.err.old").read_text() == "line 5\n"


def test_a_copy_larger_than_the_cap_is_read_back_as_its_end(tmp_path):
    """Past the cap the last bytes come back, not the first (the failure is at the end): each part of distinct
    lines, so that its start and its end differ."""
    old = b"".join(b"old %05d\n" % i for i in range(2000))
    new = b"".join(b"new %05d\n" % i for i in range(2000)) + b"Bus error (core dumped)\n"
    (tmp_path / "10.err.old").write_bytes(old)
    (tmp_path / "10.err").write_bytes(new)
    for cap in (24, 1000, len(new), len(new) + 500):
        assert instrument.stderr_copy(str(tmp_path), cap) == ((old + new)[-cap:], len(old) + len(new))


def test_records_past_each_bound_are_left_out_and_those_within_are_read(tmp_path):
    """The child is the user's program: a line past MAX_LINE, what a process wrote past MAX_FILE_BYTES, errors past
    MAX_ERRORS (each cut) and files past MAX_FILES are not read; the same records within the bounds are."""
    record = {**LOADER, "loader": "10:1", "pad": ""}
    line = json.dumps({"pid": 10, **record})
    write(tmp_path, 10, {**record, "pad": "x" * (instrument.MAX_LINE - len(line))})  # exactly MAX_LINE: read
    write(tmp_path, 10, {**record, "loader": "10:2", "pad": "x" * (instrument.MAX_LINE - len(line) + 1)})
    torch = json.dumps({"pid": 20, "kind": "torch"}) + "\n"
    (tmp_path / "20.jsonl").write_text(torch * (instrument.MAX_FILE_BYTES // len(torch) + 1))
    write(tmp_path, 20, {**LOADER, "loader": "20:1"})  # after the first MAX_FILE_BYTES bytes of its file
    write(tmp_path, 30, *({"kind": "error", "where": f"w{i}" + "w" * 40, "error": "e" * 1000} for i in range(8)))
    seen = instrument.read(str(tmp_path))
    assert [s.pid for s in seen.loaders] == [10]  # 10:1 alone
    assert len(seen.errors) == instrument.MAX_ERRORS == 5
    assert seen.errors[0] == "w0" + "w" * 18 + ": " + "e" * 300


def test_processes_past_max_files_are_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(instrument, "MAX_FILES", 10)  # 4096 files take seconds to write
    pids = range(100_000, 100_000 + instrument.MAX_FILES + 3)
    for pid in pids:
        (tmp_path / f"{pid}.jsonl").write_text(json.dumps({"pid": pid, "kind": "torch"}) + "\n")
    seen = instrument.read(str(tmp_path))
    assert seen.pids == frozenset(pids[: instrument.MAX_FILES]) and seen.torch_processes == instrument.MAX_FILES
