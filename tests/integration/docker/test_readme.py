"""The README stays true: its failing-container output is what check prints in a real default container."""

import re

from tests.helpers import docker_run, readme_blocks

BLOCKS = readme_blocks()


def test_the_failing_container_output_is_what_check_prints(images):
    """The README's 'A container that fails': the same command in a default container, line for line (the
    container's hostname, its memory in use, ulimit and CPUs aside)."""

    block = next(b for b in BLOCKS if b.startswith("FAIL  this loader needs 900 MiB"))
    proc = docker_run(
        cmd=[
            "python",
            "-m",
            "shmdoctor",
            "check",
            "--batch-size",
            "100",
            "--num-workers",
            "4",
            "--sample-bytes",
            "1MiB",
        ]
    )

    def normal(text: str) -> list[str]:
        text = re.sub(r"Facts   \w+ ", "Facts   HOST ", text)
        text = re.sub(r"ulimit -n  \d+    CPUs [\d.]+", "ulimit -n  N    CPUs N", text)
        return re.sub(r"no limit, [\d.]+ \w+ used", "no limit, USED", text).rstrip().splitlines()

    assert proc.returncode == 1 and normal(proc.stdout) == normal(block)
