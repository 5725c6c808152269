"""explain as a user runs it: exit codes, the JSON contract, and nothing of the log but the matched line."""

import json
import os
import sys
from pathlib import Path

from tests.helpers import forked_cli, validate

ENOSPC = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"


def test_a_shm_failure_exits_1_with_its_diagnosis_in_json(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(f"epoch 1\n{ENOSPC}\nexport WANDB_API_KEY=hunter2-secret\n")
    proc = forked_cli("explain", str(log), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = validate(json.loads(proc.stdout))
    assert doc["schema"] == "shmdoctor/explain/2" and doc["verdict"] == "fail"
    assert doc["diagnoses"] == [
        {
            "signature": "torch-shm-enospc",
            "cause": "shm-space",
            "consumer": "dataloader",
            "line": 2,
            "excerpt": ENOSPC,
            "bytes_needed": None,
            "count": 1,
            "found_by": "catalogue",
            "evidence": "",
        }
    ]
    assert "hunter2" not in proc.stdout and "epoch 1" not in proc.stdout


def test_text_output_says_the_cause_first_and_the_line(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(ENOSPC + "\n")
    proc = forked_cli("explain", str(log), "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB")
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("FAIL  shm-space (dataloader): ") and "needs ≥ 900 MiB" in lines[0]
    assert lines[2].startswith("Fix   ")


def test_an_mmap_enomem_is_said_not_shm_with_what_fixes_it():
    """kohya-ss/sd-scripts#1790's line: 4096 bytes of a shared tensor could not be mapped; the reporter raised
    vm.max_map_count. Not 'no shared-memory failure', nor a /dev/shm size: the limit on mappings, exit 0."""
    line = "RuntimeError: unable to mmap 4096 bytes from file </torch_362873_3123855485_63350>: "
    line += "Cannot allocate memory (12)"
    proc = forked_cli("explain", "-", input_text=line + "\n")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0].startswith("OK  not shared memory: mapping a shared tensor failed"), lines
    assert "vm.max_map_count" in lines[0] and "--shm-size" not in proc.stdout
    assert lines[2].startswith("Fix   sysctl -w vm.max_map_count=262144 ")


def test_nothing_found_exits_0():
    proc = forked_cli("explain", "-", input_text="all good\nepoch 2 loss 0.1\n")
    """Nothing recognised is said so, never OK (issue 35): exit 0, no finding."""
    assert proc.returncode == 0
    assert proc.stdout.startswith("NOT RECOGNISED  no shared-memory failure recognised in stdin")


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args in (
        ["explain", str(tmp_path / "nope.log")],
        ["explain", str(tmp_path)],
        ["explain", "x", "--container", "y"],
    ):
        proc = forked_cli(*args)
        assert proc.returncode == 2 and proc.stderr.startswith("shmdoctor: error: "), args
        assert len(proc.stderr.strip().splitlines()) == 1


def test_a_log_that_is_no_text_is_said_to_be_so_not_ok(tmp_path):
    cases = {
        "empty.log": (b"", "the log is empty"),
        "python.bin": (
            Path(os.path.realpath(sys.executable)).read_bytes()[:65536],
            "the log is binary, not a text log (",
        ),
    }
    for name, (data, said) in cases.items():
        (tmp_path / name).write_bytes(data)
        proc = forked_cli("explain", str(tmp_path / name))
        assert proc.returncode == 2 and said in proc.stderr, (name, proc.stderr)
        assert proc.stderr.count("\n") == 1
    proc = forked_cli("explain", "-", input_text="")
    assert proc.returncode == 2 and "stdin: the log is empty" in proc.stderr


def test_a_utf16_log_is_read_as_such_and_a_false_mark_is_two_stray_bytes(tmp_path):
    """PowerShell's `>` writes UTF-16 with a byte-order mark: its text is read, its lines numbered as they are. Bytes
    FF FE before 8-bit text are no mark: the log is read as text, never refused as UTF-16."""
    text = "epoch 1 训练\n" * 3 + ENOSPC + "\n"
    cases = {
        "utf16.log": text.encode("utf-16"),  # a mark, little-endian
        "utf16be.log": text.encode("utf-16-be"),  # no mark: NUL in every other byte
        "utf16-cjk.log": ("训练开始\n" * 500 + text).encode("utf-16"),  # a mark, non-ASCII first
        "false-mark.log": b"\xff\xfe" + text.encode(),
        "false-mark-latin1.log": b"\xff\xfe caf\xe9\n" + text.encode(),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        proc = forked_cli("explain", str(tmp_path / name), "--format", "json")
        assert proc.returncode == 1, (name, proc.stderr)
        line = 4 + 500 * ("cjk" in name) + ("latin1" in name)
        assert json.loads(proc.stdout)["diagnoses"][0]["line"] == line, name


def test_stray_bad_bytes_in_a_text_log_are_read_past():
    proc = forked_cli("explain", "-", input_text="\x00\xff junk\n" + ENOSPC + "\n")
    assert proc.returncode == 1, proc.stderr
