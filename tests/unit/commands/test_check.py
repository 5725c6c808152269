"""`shmdoctor check` as a user runs it on this machine: the JSON contract, bad input, lazy imports.

--dataset with a real torch Dataset: tests/integration/torch/test_check.py."""

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO, assert_one_line_error, entry_point, forked_cli, run_cli, validate

CONTRACT = {"schema", "verdict", "target", "shm", "ipc", "memory", "requirement", "findings"}


def test_json_contract():
    proc = forked_cli(
        "check", "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB", "--format", "json"
    )
    doc = validate(json.loads(proc.stdout))
    assert doc.keys() >= CONTRACT and doc["schema"] == "shmdoctor/check/1"
    assert doc["verdict"] in ("ok", "warn", "fail") and proc.returncode == (1 if doc["verdict"] == "fail" else 0)
    assert doc["target"]["kind"] == "local"
    assert {"present", "size_bytes", "used_bytes", "free_bytes", "source"} <= doc["shm"].keys()
    assert doc["requirement"]["bytes"] == 9 * 100 * 2**20
    assert [t["term"] for t in doc["requirement"]["breakdown"]] == ["dataloader"]
    for finding in doc["findings"]:
        assert {"id", "severity", "message", "fixes"} <= finding.keys()


def test_facts_only_and_python_dash_m_agree_with_the_entry_point():
    via_module = validate(json.loads(run_cli("check", "--format", "json").stdout))
    via_script = json.loads(
        subprocess.run([entry_point(), "check", "--format", "json"], capture_output=True, text=True).stdout
    )
    assert via_module["requirement"] is None
    assert via_module["shm"]["source"] == via_script["shm"]["source"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["--batch-size", "0", "--num-workers", "4", "--sample-bytes", "1m"], "batch_size"),
        (["--batch-size", "-3", "--num-workers", "4", "--sample-bytes", "1m"], "batch_size"),
        (["--batch-size", "10", "--num-workers", "-1", "--sample-bytes", "1m"], "num_workers"),
        (
            ["--batch-size", "10", "--num-workers", "0", "--prefetch-factor", "2", "--sample-bytes", "1m"],
            "num_workers > 0",
        ),
        (["--batch-size", "10", "--num-workers", "2", "--sample-bytes", "lots"], "cannot read"),
        (["--batch-size", "10", "--num-workers", "2", "--sample-bytes", "-1m"], "cannot read"),
        (["--batch-size", "10", "--num-workers", "2"], "sample size"),
        (["--batch-size", "ten"], "not a valid integer"),
        (["--format", "yaml"], "yaml"),
        (["--frobnicate"], "No such option"),
        (["--batch-size", "4", "--dataset", "nosuchmodule_xyz:ds"], "cannot import"),
        (["--batch-size", "4", "--dataset", "no-colon"], "MODULE:ATTR"),
        (["--batch-size", "4", "--dataset", "tests.loaders.seed:seed_set", "--sample-bytes", "1m"], "not both"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, words):
    assert_one_line_error(forked_cli("check", *args), 2, words)


# What check's text run does not use: torch, the Docker SDK, YAML, rich; bench's model and rules; json (its JSON
# output's only); Fraction for a size (integers do it exactly); socket for the host name (os.uname has it); the
# documents of many targets (audit's, lint's); traceback, which only a bug needs; signal (exit codes take _signal's
# numbers).
UNUSED = (
    *("torch", "docker", "yaml", "rich", "shmdoctor.bench", "shmdoctor.rules_bench", "json", "fractions", "socket"),
    *("shmdoctor.reports", "traceback", "signal"),
)


def _after_check(expression: str) -> str:
    """What `expression` prints in a process that has run check's text output, and nothing else."""
    code = (
        "import sys; from shmdoctor.cli import main; main(['check', '--batch-size', '100', '--num-workers', '4', "
        f"'--sample-bytes', '1MiB']); print({expression})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stdout
    return out.strip().splitlines()[-1]


def test_check_imports_nothing_it_does_not_use():
    assert _after_check(f"sorted(m for m in {UNUSED!r} if m in sys.modules)") == "[]"


def test_the_dataclasses_check_builds_take_equality_hash_and_repr_from_model_value():
    """Each method a dataclass generates is compiled as its module is imported (docs/speed.md §3): the classes
    check's modules define generate only __init__ and the frozen __setattr__ and __delattr__."""
    own = (
        "sorted(f'{c.__module__}.{c.__name__}' for m in list(sys.modules.values()) "
        "if m.__name__.startswith('shmdoctor') for c in vars(m).values() if hasattr(c, '__dataclass_fields__') "
        "and c.__module__ == m.__name__ and {'__eq__', '__hash__', '__repr__'} & set(vars(c)))"
    )
    built = "len([c for m in list(sys.modules.values()) if m.__name__.startswith('shmdoctor') " + (
        "for c in vars(m).values() if hasattr(c, '__dataclass_fields__') and c.__module__ == m.__name__])"
    )
    assert _after_check(f"{own}, {built}") == "[] 25"  # none of its own, of the 25 check builds
