"""The files created in a directory as the kernel tells them (real inotify on real files in a temporary directory):
what is told, a hostile name, a read's bound and the kernel's full queue."""

import os
from pathlib import Path

from shmdoctor.shm.creations import READ_BYTES, Creations
from shmdoctor.shm.segments import creator_pid

QUEUE = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())


def watched(directory) -> Creations:
    creations = Creations.watch(str(directory))
    assert creations is not None, "inotify is there on Linux"
    return creations


def read_all(creations: Creations) -> tuple[list[str], bool, int]:
    """Everything queued: the names, whether some were lost, and how many reads it took."""
    names, lost, reads = [], False, 0
    while True:
        got, gone = creations.read()
        if not got and not gone:
            return names, lost, reads
        names, lost, reads = names + got, lost or gone, reads + 1


def test_files_created_are_told_in_order_and_nothing_else(tmp_path):
    (tmp_path / "before").write_bytes(b"x")
    creations = watched(tmp_path)
    try:
        assert creations.read() == ([], False)  # nothing queued: told at once, never waited on
        (tmp_path / "torch_12_345_0").write_bytes(b"x" * 4096)
        (tmp_path / "sub").mkdir()  # a directory is no segment
        (tmp_path / "before").write_bytes(b"yy")  # written, not created
        (tmp_path / "nccl-AbC123").touch()
        (tmp_path / "nccl-AbC123").unlink()  # created all the same
        os.rename(tmp_path / "before", tmp_path / "renamed")  # moved in, not created
        assert creations.read() == (["torch_12_345_0", "nccl-AbC123"], False)
        assert creations.read() == ([], False)
    finally:
        creations.close()


def test_a_hostile_name_comes_back_as_its_bytes_and_names_no_creator(tmp_path):
    # not UTF-8 and a newline, 255 bytes (NAME_MAX), an Arabic-Indic digit one
    hostile = [b"torch_1_\xff\n_0", b"torch_" + b"9" * 249, "torch_\u0661_2_3".encode()]
    creations = watched(tmp_path)
    try:
        for name in hostile:
            os.close(os.open(os.path.join(os.fsencode(tmp_path), name), os.O_CREAT | os.O_WRONLY, 0o600))
        names, lost = creations.read()
    finally:
        creations.close()
    assert [os.fsencode(n) for n in names] == hostile and not lost
    assert [creator_pid(n) for n in names] == [None, None, None]


def test_a_read_takes_one_buffer_and_the_rest_waits_for_the_next(tmp_path):
    name = "torch_4194304_4294967295_{:06}"  # 31 bytes and a NUL: 48 bytes an event with its header
    count = 3 * READ_BYTES // 48 + 1  # four buffers' worth
    creations = watched(tmp_path)
    try:
        for n in range(count):
            (tmp_path / name.format(n)).touch()
        first, _ = creations.read()
        rest, lost, reads = read_all(creations)
    finally:
        creations.close()
    assert len(first) == READ_BYTES // 48 and reads == 3 and not lost
    assert first + rest == [name.format(n) for n in range(count)]


def test_a_flood_past_the_kernels_queue_is_bounded_by_it_and_said_lost(tmp_path):
    creations = watched(tmp_path)
    try:
        for n in range(QUEUE + 100):
            (tmp_path / f"f{n}").touch()
        names, lost, _ = read_all(creations)
    finally:
        creations.close()
    assert lost and names == [f"f{n}" for n in range(QUEUE)]  # the first QUEUE told, then the overflow


def test_what_cannot_be_watched_is_none(tmp_path):
    (tmp_path / "file").touch()
    assert Creations.watch(str(tmp_path / "file")) is None  # not a directory
    assert Creations.watch(str(tmp_path / "missing")) is None
