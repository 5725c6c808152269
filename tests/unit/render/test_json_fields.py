"""docs/json.md documents every field of every command's JSON: each property of each schema
(shmdoctor/render/schemas/*.json) has its row in that schema's section, and each row names a property of it, so the
page cannot drift from the schemas."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import REPO

SCHEMAS = sorted((REPO / "shmdoctor" / "render" / "schemas").glob("*.json"))
PAGE = (REPO / "docs" / "json.md").read_text()


def properties(node: object) -> set[str]:
    """The name of every property the schema defines, wherever (its $defs included)."""
    if isinstance(node, list):
        return {name for item in node for name in properties(item)}
    if not isinstance(node, dict):
        return set()
    own = set(node["properties"]) if isinstance(node.get("properties"), dict) else set()
    return own | {name for value in node.values() for name in properties(value)}


def documented(schema: str) -> set[str]:
    """The last part of each path named in the first column of the schema's section (`a.b[].c` names c)."""
    section = re.search(rf"^### `{re.escape(schema)}`.*?(?=^### |\Z)", PAGE, re.M | re.S)
    assert section, f"docs/json.md has no section ### `{schema}`"
    cells = re.findall(r"^\| (.+?) \| ", section.group(), re.M)
    return {re.split(r"\.|\[\]\.", path)[-1] for cell in cells for path in re.findall(r"`([^`]+)`", cell)}


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_every_property_of_every_schema_is_documented_and_nothing_else(path):
    defined = properties(json.loads(path.read_text()))
    said = documented(path.name) - {"field"}
    assert defined, path
    assert not defined - said, f"docs/json.md does not document {sorted(defined - said)} of {path.name}"
    assert not said - defined, f"docs/json.md documents {sorted(said - defined)}, which {path.name} does not define"


def test_one_name_for_one_thing():
    """A duration is `*_seconds` and an exit code `exit_code` in every schema (run, watch and explain version 2:
    `elapsed_s`, `duration_s` and explain's `exit` object were the same things named otherwise)."""
    names = set().union(*(properties(json.loads(path.read_text())) for path in SCHEMAS))
    assert not {name for name in names if name.endswith("_s") or name in ("exit", "elapsed", "duration", "code")}
    assert {"duration_seconds", "exit_code", "batch_seconds"} <= names
