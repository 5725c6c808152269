"""README.md's first command, as a newcomer runs it on a fresh machine: in a copy of this tree, a fresh venv, this tree
installed (pip, from the package index), then check judges the seed loader here. Its other command, `bash
scripts/test.sh`, is what CI runs (.ci/run)."""

from __future__ import annotations

import os
import re
import subprocess

from tests.helpers import doc_blocks
from tests.integration.ci.tree import copy_tree

INSTALL = 600  # seconds: the venv, and pip installing this tree and its dependencies from the index


def first_command() -> str:
    block = next(b for b in doc_blocks("README.md") if b.language == "bash")
    (line,) = [line for line in block.body.splitlines()[:3] if line and not line.startswith("#")]
    return line


def test_the_readmes_first_command_installs_and_judges_the_seed_loader(tmp_path):
    line = first_command()
    assert line.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install . && shmdoctor check ")
    copy_tree(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        ["bash", "-c", line],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=INSTALL,
        env={**env, "NO_COLOR": "1"},
    )
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]  # a verdict: this machine decides
    verdict = re.search(r"^(OK|WARN|FAIL)  ", proc.stdout, re.M)  # after pip's lines
    assert verdict, proc.stdout
    report = proc.stdout[verdict.start() :]
    assert "Need    900 MiB" in report and "(2·4 + 1) × 100 MiB" in report, report  # the seed's need
    assert (tmp_path / ".venv" / "bin" / "shmdoctor").is_file()
