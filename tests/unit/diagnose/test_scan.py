"""Reading a log right: every match counted and each cause shown, a context line that covers its block, colour codes
stripped, and what the log says of the job's GPUs."""

from shmdoctor.diagnose import scan_text
from shmdoctor.diagnose.scan import ANSI

DENIED = "[{r}] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'"
CREATE = (
    "[{r}] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x{r} (size 9637888)"
)
ENOSPC = "RuntimeError: unable to write to file </torch_31911_952036340_6686>: No space left on device (28)"


def test_every_match_is_counted_not_capped_and_the_first_line_kept():
    log = "\n".join(["epoch 1", *[ENOSPC] * 7, "done"])
    (d,) = scan_text(log).diagnoses()
    assert (d.line, d.count) == (2, 7)
    assert d.as_dict()["count"] == 7


def test_a_registration_failure_covers_its_block_across_a_blank_line_for_its_own_device_only():
    # nccl#1518: the WARN, a blank line, the WARN that follows from it; device 0 failed for space alone
    log = "\n".join([DENIED.format(r=1), "", CREATE.format(r=1), "", CREATE.format(r=0)])
    found = {(d.cause, d.line, d.count) for d in scan_text(log).diagnoses()}
    assert found == {("not-shm", 3, 1), ("shm-space", 5, 1)}


def test_a_registration_failure_far_above_does_not_cover_a_later_failure():
    log = "\n".join([DENIED.format(r=1), *["x"] * 4, CREATE.format(r=1)])
    assert [d.cause for d in scan_text(log).diagnoses()] == ["shm-space"]


def test_colour_codes_are_stripped_before_matching_and_from_the_excerpt():
    coloured = (
        "\x1b[31m\x1b[1mRuntimeError\x1b[0m: unable to write to file </torch_1_2_3>: No space left on device (28)"
    )
    (d,) = scan_text(coloured).diagnoses()
    assert d.excerpt == "RuntimeError: unable to write to file </torch_1_2_3>: No space left on device (28)"
    assert ANSI.sub("", "\x1b[38;5;196mred\x1b[K") == "red"


def test_the_gpus_a_log_names():
    nccl_old = "host:97:176 [0] NCCL INFO comm 0x7ff1ec001060 rank 0 nranks 2 cudaDev 0 busId 100000 - Init COMPLETE"
    assert scan_text(nccl_old).clues.ranks == 2
    nccl_new = "h:1:2 [3] NCCL INFO comm 0x55 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3 MNNVL 0"
    assert scan_text(nccl_new).clues.ranks == 8  # 16 ranks on two hosts: 8 of them here
    assert scan_text(CREATE.format(r=5)).clues.ranks == 6  # device 5: at least six
    assert scan_text("torchrun --nproc_per_node=4 train.py").clues.ranks == 4
    assert scan_text("  rank      : 7 (local_rank: 7)").clues.ranks == 8
    channels = scan_text("h:1:2 [1] NCCL INFO 2 coll channels, 2 p2p channels, 2 p2p channels per peer").clues
    assert channels.channels == 2
    assert scan_text("rank 0 nranks 99999999").clues.ranks is None  # no host has that many GPUs


def test_a_message_wrapped_after_its_literal_is_read_with_its_next_line():
    # Ray's warning broken by a viewer at a space, vLLM's by a terminal mid-word: read as one, at the first line
    ray = (
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only\n"
        "67108864 bytes available. You can increase /dev/shm size by passing '--shm-size=5.04gb' to 'docker run'"
    )
    (d,) = scan_text("epoch 1\n" + ray).diagnoses()
    assert (d.signature, d.line, d.bytes_needed) == ("ray-object-store-tmp", 2, int(5.04 * 2**30))
    vllm = "RuntimeError: Insufficient space in /dev/shm for psm_1: 161.0 MiB requ\nired, 60.2 MiB free."
    (d,) = scan_text(vllm).diagnoses()
    assert d.signature == "vllm-shm-insufficient" and d.bytes_needed == 161 * 2**20
    # a message whose next line is another message is not joined into one
    assert scan_text("Killed 3 stale workers\nfrom the previous run").diagnoses() == ()


def test_grep_and_the_python_loop_hand_over_the_line_after_a_candidate(tmp_path):
    import io
    import shutil

    from shmdoctor.diagnose.scan import Prefilter, anchors
    from shmdoctor.probe import logs

    data = b"a\nKilled\nrest\nb\nc\nKilled\n"
    keys = [k.encode() for k in anchors()]
    want = [(2, b"Killed\n", 1), (3, b"rest\n", 1), (6, b"Killed\n", 1)]
    assert list(logs._python_lines(io.BytesIO(data), Prefilter(anchors()))) == want
    if shutil.which("grep"):
        (tmp_path / "x.log").write_bytes(data)
        with open(tmp_path / "x.log", "rb") as f:
            assert list(logs._grep_lines(f, keys, shutil.which("grep"), shutil.which("uniq"))) == want


def test_the_python_prefilter_finds_exactly_the_lines_holding_a_literal_as_grep_does():
    """Its gate is case-blind and drops literals that hold another; the literals themselves still decide."""
    from shmdoctor.diagnose.scan import Prefilter, anchors

    keys = Prefilter(anchors())
    for key in keys.exact:
        for line in (b"x " + key + b" y", b"x " + key.swapcase() + b" y", b"x " + key[:-1] + b" y"):
            assert keys.holds(line) == any(k in line for k in keys.exact), line
    assert not keys.holds(b"2026-12-01 INFO trainer.py:123 -- epoch 3 step 1200/5000 loss=0.2341")


def test_the_gates_trie_matches_where_the_plain_alternation_of_its_literals_does():
    """The gate factors the literals' common starts (scan._trie); what it matches is what 'a|b|c' matches."""
    import re

    from shmdoctor.diagnose.scan import _trie

    keys = [b"ab", b"acx", b"ad(", b"b-7", b"os.", b"shm", b"shared mem"]
    plain, trie = re.compile(b"|".join(re.escape(k) for k in keys)), re.compile(_trie(keys))
    assert _trie([b"ab", b"acx", b"os."]) == rb"(?:a(?:b|c(?:x))|o(?:s(?:\.)))"  # one branch a first byte
    for line in (b"xab", b"ac", b"acx", b"a(d", b"ad(", b"b-7 b-8", b"pos.", b"shared me", b"shared mem", b"sh", b""):
        assert bool(trie.search(line)) == bool(plain.search(line)), line
