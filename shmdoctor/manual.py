"""Where the manual is for an installed copy: the URLs of the package's metadata ([project.urls] in pyproject.toml),
read only where they are printed (the metadata's parser costs about 3 ms: check's start does without it)."""

from __future__ import annotations

from importlib import metadata
from urllib.parse import urljoin

SOURCE_DOCS = "docs/index.md"  # where the manual is in a tree that was never installed


def urls() -> dict[str, str]:
    """[project.urls] of the installed package ({} where it is run from a tree that was never installed)."""
    try:
        pairs = metadata.metadata("shmdoctor").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return {}
    labelled = (pair.partition(",") for pair in pairs)  # "Documentation, https://..."
    return {label.strip(): url.strip() for label, _, url in labelled if url}


def page(path: str) -> str:
    """A page of the manual (a path under docs/, as "commands/lint.md"): its URL beside the Documentation URL, or its
    path in the tree."""
    docs = urls().get("Documentation")
    return urljoin(docs, path) if docs else urljoin(SOURCE_DOCS, path)
