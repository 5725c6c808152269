"""The output layer is total: every document kind has a renderer in every format of its own and a JSON Schema whose
$id is its schema ID; every document class in the package is a kind the registry knows."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil

import jsonschema
import pytest

import shmdoctor
from shmdoctor import render


def _document_classes() -> dict[str, type]:
    """Every class in the package that says what kind of document it is (a `kind` of its own, a ClassVar)."""
    found = {}
    for info in pkgutil.walk_packages(shmdoctor.__path__, "shmdoctor."):
        if info.name.endswith(("__main__", "bench.child", "bench.zygote", "bench.synthetic")):
            continue  # run as programs, or torch at import
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and isinstance(cls.__dict__.get("kind"), str):
                found[cls.__dict__["kind"]] = cls
    return found


def test_every_kind_has_a_renderer_in_every_format_and_nothing_else():
    assert set(render.RENDERERS) == {(kind, fmt) for kind in render.SCHEMAS for fmt in render.formats(kind)}
    assert {kind for kind, fmt in render.RENDERERS if fmt == "sarif"} == {"lint", "audit"}
    for kind, fmt in render.RENDERERS:
        assert callable(render.renderer(kind, fmt)), (kind, fmt)


def test_every_document_class_is_a_registered_kind():
    classes = _document_classes()
    assert set(classes) == set(render.SCHEMAS), "a document class without renderers, or a kind without a class"
    assert all(dataclasses.is_dataclass(cls) for cls in classes.values())


@pytest.mark.parametrize("schema", sorted(set(render.SCHEMAS.values()) | set(render.RESERVED.values())))
def test_schema_ids_are_shmdoctor_name_version(schema):
    prefix, name, version = schema.split("/")
    assert prefix == "shmdoctor" and name.isidentifier() and version.isdigit()


@pytest.mark.parametrize("schema", sorted(set(render.SCHEMAS.values())))
def test_every_schema_id_has_its_schema_file(schema):
    doc = json.loads(render.schema_file(schema).read_text())
    assert doc["$id"] == schema
    jsonschema.Draft202012Validator.check_schema(doc)
    variants = doc.get("oneOf", [doc])  # watch: a sample or a summary, each saying its schema
    assert all(variant["properties"]["schema"] == {"const": schema} for variant in variants)


def test_no_schema_file_without_its_id():
    ids = set(render.SCHEMAS.values()) | set(render.RESERVED.values())
    for path in render.schema_file("shmdoctor/check/1").parent.glob("*.json"):
        assert json.loads(path.read_text())["$id"] in ids, path


def test_an_unknown_format_or_kind_is_a_key_error_not_a_guess():
    with pytest.raises(KeyError):
        render.renderer("check", "yaml")
    with pytest.raises(KeyError):
        render.renderer("nothing", "text")


def test_docs_json_md_validates_a_document_with_its_two_line_registry():
    """docs/json.md's block, run as written on what lint printed: every $ref resolves from the shipped schemas."""
    from tests.helpers import DATA, doc_blocks, forked_cli

    (block,) = [b.body for b in doc_blocks("docs/json.md") if b.language == "python"]
    doc = json.loads(forked_cli("lint", str(DATA / "suppress"), "--format", "json").stdout)
    exec(block, {"doc": doc})  # raises on a document its schema refuses
    doc["reports"][0]["findings"][0]["suppressed"] = {"by": "x", "kind": "elsewhere"}
    with pytest.raises(jsonschema.ValidationError):
        exec(block, {"doc": doc})
