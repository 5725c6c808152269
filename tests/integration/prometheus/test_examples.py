"""examples/prometheus/'s alerting rules through promtool: valid, and their unit tests pass (a /dev/shm at 95%
fires ShmNearlyFull, one at 10% does not)."""

from __future__ import annotations

import subprocess

from tests.helpers import REPO
from tests.integration.prometheus.exporting import binary

EXAMPLES = REPO / "examples" / "prometheus"


def test_promtool_check_rules():
    proc = subprocess.run(
        [binary("promtool"), "check", "rules", "shmdoctor-rules.yml"], cwd=EXAMPLES, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 5 rules found" in proc.stdout + proc.stderr


def test_promtool_test_rules():
    proc = subprocess.run(
        [binary("promtool"), "test", "rules", "shmdoctor-rules.test.yml"], cwd=EXAMPLES, capture_output=True, text=True
    )
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr
