"""This tree as a user would fetch it: what git tracks or would track (less what it ignores), committed in a
repository of its own, so that pre-commit can clone it at a rev and pip can build it without writing here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.helpers import REPO

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,  # no user's hooksPath or template
}


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, env={**os.environ, **GIT_ENV}
    )


def copy_tree(repo: Path) -> str:
    """Copy this tree into repo (an empty folder), commit it there; its commit."""
    listed = git("ls-files", "-co", "--exclude-standard", "-z", cwd=REPO).stdout.split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "tree")):
        assert git(*args, cwd=repo).returncode == 0, args
    return git("rev-parse", "HEAD", cwd=repo).stdout.strip()
