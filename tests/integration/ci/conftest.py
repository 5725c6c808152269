"""The fixtures of the CI integrations' tests (tree.py says what the tree is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.ci.tree import copy_tree


@pytest.fixture(scope="session")
def tree(tmp_path_factory) -> tuple[Path, str]:
    """This tree, committed in a repository of its own: (its folder, its commit)."""
    repo = tmp_path_factory.mktemp("shmdoctor-tree")
    return repo, copy_tree(repo)
