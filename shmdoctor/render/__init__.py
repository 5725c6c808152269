"""The one output layer: every document shmdoctor prints, in every format, goes through render().

A document is a frozen object with a class attribute `kind` (e.g. Report.kind == "check"). RENDERERS maps each
(kind, format) to the function that renders it, named "module:function" so that a command imports only its own
renderers (check never pays for bench's). A renderer takes the document and returns a string: what to print, or ""
for nothing (a watch sample with no news in text; JSON lines have no header). Renderers format, nothing else: the
verdict, the fixes and the exit code are the document's, computed before it is rendered.

Each kind has a JSON schema ID (SCHEMAS), which its JSON renderer writes as the document's "schema" field, and a JSON
Schema file, schemas/<kind>.json, whose $id is that ID. To add a document: give its class a `kind`, add the kind to
SCHEMAS, one RENDERERS entry per format in formats(kind), and schemas/<kind>.json; tests/unit/render/test_registry.py
proves the mapping total and every schema file present. SARIF (code scanning's format), GitHub's workflow commands
and JUnit XML are for the documents whose findings sit in files or containers: lint's and audit's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable

from .escape import escaped

if TYPE_CHECKING:
    from pathlib import Path

FORMATS = ("text", "json")  # every document's
SARIF_KINDS = ("lint", "audit")

SCHEMAS: dict[str, str] = {
    "check": "shmdoctor/check/1",
    "audit": "shmdoctor/audit/1",
    "lint": "shmdoctor/lint/1",
    "clean": "shmdoctor/clean/1",
    "watch.start": "shmdoctor/watch/2",  # watch prints a stream: its start, each sample, its summary
    "watch.sample": "shmdoctor/watch/2",
    "watch.summary": "shmdoctor/watch/2",
    "explain": "shmdoctor/explain/2",
    "run": "shmdoctor/run/2",  # --report's document; its text goes to stderr (the command's stdout is its own)
    "bench": "shmdoctor/bench/1",
}
# Taken, for the documents still to come through here: their JSON writes these IDs.
RESERVED: dict[str, str] = {}

RENDERERS: dict[tuple[str, str], str] = {
    ("check", "text"): "shmdoctor.render.check:to_text",
    ("check", "json"): "shmdoctor.render.check:to_json",
    ("audit", "text"): "shmdoctor.render.audit:to_text",
    ("audit", "json"): "shmdoctor.render.audit:to_json",
    ("audit", "sarif"): "shmdoctor.render.sarif:to_sarif",
    ("lint", "text"): "shmdoctor.render.lint:to_text",
    ("lint", "json"): "shmdoctor.render.lint:to_json",
    ("lint", "sarif"): "shmdoctor.render.sarif:to_sarif",
    ("lint", "github"): "shmdoctor.render.github:to_github",
    ("audit", "github"): "shmdoctor.render.github:to_github",
    ("lint", "junit"): "shmdoctor.render.junit:to_junit",
    ("audit", "junit"): "shmdoctor.render.junit:to_junit",
    ("clean", "text"): "shmdoctor.render.clean:to_text",
    ("clean", "json"): "shmdoctor.render.clean:to_json",
    ("watch.start", "text"): "shmdoctor.render.watch:start_text",
    ("watch.start", "json"): "shmdoctor.render.watch:start_json",
    ("watch.sample", "text"): "shmdoctor.render.watch:sample_text",
    ("watch.sample", "json"): "shmdoctor.render.watch:sample_json",
    ("watch.summary", "text"): "shmdoctor.render.watch:summary_text",
    ("watch.summary", "json"): "shmdoctor.render.watch:summary_json",
    ("explain", "text"): "shmdoctor.render.explain:to_text",
    ("explain", "json"): "shmdoctor.render.explain:to_json",
    ("run", "text"): "shmdoctor.render.run:to_text",
    ("run", "json"): "shmdoctor.render.run:to_json",
    ("bench", "text"): "shmdoctor.render.bench:to_text",
    ("bench", "json"): "shmdoctor.render.bench:to_json",
}


def formats(kind: str) -> tuple[str, ...]:
    """The formats a kind renders to."""
    return FORMATS + (("sarif", "github", "junit") if kind in SARIF_KINDS else ())


def schema_id(kind: str) -> str:
    """The "schema" field of a kind's JSON document."""
    return SCHEMAS.get(kind) or RESERVED[kind]


def schema_file(schema: str) -> Path:
    """The JSON Schema file of a schema ID: shmdoctor/<name>/<version> is schemas/<name>.json."""
    from pathlib import Path  # for tests and tools: no command needs it

    return Path(__file__).parent / "schemas" / f"{schema.split('/')[1]}.json"


def renderer(kind: str, fmt: str) -> Callable[[Any], str]:
    module, _, name = RENDERERS[(kind, fmt)].partition(":")
    return getattr(importlib.import_module(module), name)


def render(document: Any, fmt: str) -> str:
    """The document as `fmt` (one of formats(kind)): a string to print, "" when there is nothing to print. Text is
    rendered from the document with its control characters escaped (escape.py): a name cannot drive the terminal."""
    if fmt == "text":
        document = escaped(document)
    return renderer(document.kind, fmt)(document)
