"""Read compose files and Kubernetes manifests: paths, directories and stdin -> parsed documents, with lines.

YAML mappings come back as `Node` (a dict that remembers its line) so that a bad value can be reported as
`file:line`. JSON (`kubectl get -o json`) is read with the json module: faster, and its errors carry a line too.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..model import Facts

SUFFIXES = (".yml", ".yaml", ".json")
STDIN = "<stdin>"


class Unparsable(UsageError):
    """A file that is neither YAML nor JSON (an unrendered template, tabs): among others, lint passes it over."""


class Node(dict):
    """A YAML mapping with the line it starts on (1-based)."""

    line: int | None = None


def line_of(node: Any) -> int | None:
    return getattr(node, "line", None)


def where(source: str, node: Any = None) -> str:
    """'file:line' for an error message, or 'file' when the line is not known (JSON)."""
    line = line_of(node)
    return f"{source}:{line}" if line else source


@dataclass(frozen=True)
class Document:
    source: str  # the path as given or found, or <stdin>
    index: int  # 0-based position in a multi-document file
    body: Any


def _yaml_loader():
    import yaml  # lazy: only lint reads YAML

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        pass

    def mapping(loader, node):
        loader.flatten_mapping(node)  # honour `<<: *anchor` merge keys
        pairs = loader.construct_pairs(node, deep=True)
        for (key_node, _), (key, _) in zip(node.value, pairs):
            if not isinstance(key, Hashable):  # `name: {{ .Values.x }}`: a template that was not rendered
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    "found a mapping as a key (an unrendered template? run helm template first)",
                    key_node.start_mark,
                )
        out = Node(pairs)
        out.line = node.start_mark.line + 1
        return out

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return yaml, Loader


def parse(text: str, source: str) -> list[Document]:
    """All documents of one input; empty documents (a trailing `---`) are dropped. UsageError with file:line."""
    if source.endswith(".json") or (source == STDIN and text.lstrip()[:1] in ("{", "[")):
        try:
            return [Document(source, 0, json.loads(text))]
        except json.JSONDecodeError as e:
            if source != STDIN:
                raise Unparsable(f"{source}:{e.lineno}: not JSON: {e.msg}") from None
    yaml, loader = _yaml_loader()
    try:
        bodies = list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise Unparsable(f"{source}{at}: not YAML: {problem}") from None
    return [Document(source, i, body) for i, body in enumerate(bodies) if body is not None]


def files(path: str) -> Iterator[str]:
    """The inputs a path names: '-', the file itself, or a directory's *.yml, *.yaml and *.json (recursively)."""
    if path == "-":
        yield path
    elif os.path.isdir(path):
        found = False
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    found = True
                    yield os.path.join(root, name)
        if not found:
            raise UsageError(f"{path}: no *.yml, *.yaml or *.json file in this directory")
    elif os.path.exists(path):
        yield path
    else:
        raise UsageError(f"{path}: no such file or directory")


def text(name: str) -> str:
    """A file's text (or stdin's, for '-'), as UTF-8; UsageError when it cannot be read."""
    if name == "-":
        return _read_stdin()
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{name}: cannot read: {_reason(e)}") from None


def _read_stdin() -> str:
    """stdin as UTF-8, as files are read; UsageError when it is closed or not text."""
    if sys.stdin is None:  # started with fd 0 closed
        raise UsageError(f"{STDIN}: cannot read: standard input is closed")
    try:
        stream = getattr(sys.stdin, "buffer", None)  # the bytes, so that the locale does not decide the encoding
        return stream.read().decode("utf-8") if stream is not None else sys.stdin.read()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{STDIN}: cannot read: {_reason(e)}") from None


def _reason(e: OSError | UnicodeDecodeError) -> str:
    return getattr(e, "strerror", None) or str(e)


@dataclass(frozen=True)
class Definition:
    """One target read from a file: its facts and, where it carries one, its own loader spec (unparsed)."""

    facts: Facts
    loader_spec: str | None = None
    loader_at: str = ""  # file:line of the spec, for its error message
