"""The bounds of what the scanner reads and keeps of a line, each at its edge: a match in the first 64 KiB of a line
and one cut by its last byte, an excerpt of exactly 240 characters and one more, the window 40 characters before the
match, at the line's start, middle and end, an indented line, control characters, a progress bar's redraws; the
diagnoses in the order of the log, and the same whether the log is read from a file or from memory."""

import dataclasses

import pytest

from shmdoctor.diagnose import scan_text
from shmdoctor.diagnose.scan import Scanner
from shmdoctor.probe import logs

# PyTorch's MapAllocator (idiap/ESLAM#20); the match starts at 'unable'
ENOSPC = "RuntimeError: unable to write to file </torch_31911_952036340_6686>: No space left on device (28)"
AT = len("RuntimeError: ")  # where the match starts in ENOSPC
# NCCL's creation failure (nccl#1518's text, one rank)
CREATE = (
    "node1:55:60 [0] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x "
    "(size 9637888)"
)


def _found(log):
    """The catalogue's matches (the general reader reads a cut line's words on their own: test_reader.py)."""
    return [(d.signature, d.line, d.count) for d in scan_text(log).diagnoses() if d.found_by == "catalogue"]


@pytest.mark.parametrize(
    ("length", "found"),
    [(64 * 1024, True), (64 * 1024 + 1, False)],
    ids=["ends-on-the-64-KiB-th-byte", "its-last-byte-one-past"],
)
@pytest.mark.parametrize("form", [str, bytes])
def test_a_match_ending_on_the_last_byte_of_a_lines_first_64_kib_is_read_one_byte_more_is_not(length, found, form):
    line = "x" * (length - len(ENOSPC)) + ENOSPC
    assert len(line) == length
    log = line if form is str else line.encode()
    assert _found(log) == ([("torch-shm-enospc", 1, 1)] if found else [])


@pytest.mark.parametrize("length", [64 * 1024, 64 * 1024 + 1])
def test_a_log_file_is_cut_at_the_same_byte_as_a_log_in_memory(tmp_path, length):
    line = "x" * (length - len(ENOSPC)) + ENOSPC
    path = tmp_path / "train.log"
    path.write_text(line + "\n")
    with logs.open_log(str(path)) as f:
        from_file = logs.scan(f).diagnoses()
    assert from_file == scan_text(line + "\n").diagnoses()


@pytest.mark.parametrize(
    ("pad", "expected"),
    [
        (240 - len(ENOSPC), lambda line: line),  # exactly 240 characters: whole
        (241 - len(ENOSPC), lambda line: "…" + line[1:]),  # one more: the first character left out
        (0, lambda line: line),  # a short line: whole, no mark
    ],
    ids=["240", "241", "short"],
)
def test_an_excerpt_keeps_a_line_of_240_characters_whole_and_cuts_one_of_241(pad, expected):
    line = "x" * pad + ENOSPC
    (d,) = scan_text(line).diagnoses()
    assert d.excerpt == expected(line)
    assert len(d.excerpt) <= 241


@pytest.mark.parametrize(
    ("before", "length", "window"),
    [
        (0, 1000, (0, 240)),  # at the start: from the line's first character, the rest marked
        (40 - AT, 1000, (0, 240)),  # the match 40 characters in: still from the start
        (41 - AT, 1000, (1, 241)),  # 41 in: from the character 40 before the match
        (500 - AT, 2000, (460, 700)),  # in the middle: 40 before it, 240 in all
        (900 - AT, 1000, (760, 1000)),  # near the end: the last 240 characters
    ],
    ids=["start", "40-in", "41-in", "middle", "end"],
)
def test_an_excerpt_is_240_characters_from_40_before_the_match_within_the_line(before, length, window):
    line = "a" * before + ENOSPC
    line += "b" * (length - len(line))
    assert (line.index("unable"), len(line)) == (before + AT, length)
    (d,) = scan_text(line).diagnoses()
    lo, hi = window
    assert d.excerpt == ("…" if lo else "") + line[lo:hi] + ("…" if hi < length else "")


def test_an_indented_line_keeps_its_match_in_the_excerpt():
    # 300 spaces of indentation are left out, and the window is placed on the match in the 280 characters left
    rest = "a" * 50 + ENOSPC
    rest += "b" * (280 - len(rest))
    (d,) = scan_text(" " * 300 + rest).diagnoses()
    assert rest.index("unable") == 50 + AT
    assert d.excerpt == "…" + rest[50 + AT - 40 : 50 + AT + 200] + "…"


def test_control_characters_are_shown_as_question_marks_and_a_tab_is_kept():
    line = "step\x00 1\x07 of\x7f 9\t" + ENOSPC + "\x1b"  # NUL, BEL and DEL around the tab; a lone ESC (no CSI)
    (d,) = scan_text(line).diagnoses()
    assert d.excerpt == "step? 1? of? 9\t" + ENOSPC + "?"


def test_each_redraw_of_a_progress_bar_is_a_line_of_its_own():
    bar = "epoch 1:  10%|#         | 1/10\r" + ENOSPC + "\repoch 1:  20%|##        | 2/10\r" + ENOSPC
    (d,) = scan_text("start\n" + bar).diagnoses()
    assert (d.line, d.count, d.excerpt) == (2, 2, ENOSPC)


def test_diagnoses_come_in_the_order_of_the_log_not_of_their_names():
    log = "\n".join(["epoch 1", ENOSPC, "", CREATE])
    assert [(s, line) for s, line, _ in _found(log)] == [("torch-shm-enospc", 2), ("nccl-shm-create", 4)]


def test_a_diagnosis_is_a_value_frozen_and_hashable():
    (d,) = scan_text(ENOSPC).diagnoses()
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.count = 2  # type: ignore[misc]
    assert {d, scan_text(ENOSPC).diagnoses()[0]} == {d}


def test_the_first_line_is_read_from_memory_as_from_a_file(tmp_path):
    # A literal a colour code breaks is no candidate for grep's fixed strings, nor for the loop over a log in memory;
    # the line is one all the same where it holds another literal (/dev/shm, where it ran): both readers agree.
    vllm = "RuntimeError: \x1b[31mInsufficient space\x1b[0m in /dev/shm for psm_1: 161.0 MiB required, 60.2 MiB free."
    log = vllm + "\n" + ENOSPC
    path = tmp_path / "train.log"
    path.write_text(log)
    with logs.open_log(str(path)) as f:
        from_file = logs.scan(f).diagnoses()
    assert from_file == scan_text(log).diagnoses()
    assert [(d.signature, d.line) for d in from_file] == [("vllm-shm-insufficient", 1), ("torch-shm-enospc", 2)]


def test_the_scanner_takes_the_lines_a_reader_hands_over_with_their_numbers():
    scanner = Scanner()
    scanner.line(7, ENOSPC.encode() + b"\r\n")
    (d,) = scanner.diagnoses()
    assert (d.line, d.excerpt) == (7, ENOSPC)
