"""Read compose files and Kubernetes manifests: paths, directories and stdin -> parsed documents, with lines.

YAML mappings come back as `Node` (a dict that remembers its line) so that a bad value can be reported as
`file:line`. JSON (`kubectl get -o json`) is read with the json module: faster, and its errors carry a line too.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import re
import sys
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UsageError
from ..limits import MAX_DEPTH, MAX_DIGITS, MAX_JSON_BYTES, MAX_NODES, MAX_YAML_BYTES
from ..model import Facts, Target
from ..suppress import Ignore
from .regular import open_regular
from .unknown import Unknown

# .container, .pod: Quadlet units; .tf: Terraform; .nomad, .nomad.hcl: Nomad jobs
SUFFIXES = (".yml", ".yaml", ".json", ".container", ".pod", ".tf", ".nomad", ".nomad.hcl")
STDIN = "<stdin>"
TEMPLATES = tuple(f"{s}{t}" for s in SUFFIXES for t in (".j2", ".jinja", ".jinja2", ".tpl"))  # said, not read
# Scripts, read for their docker / podman / nerdctl run commands: by suffix, by name, or (without a suffix) by a
# shebang naming a shell. A folder run reads them unless --no-scripts; a file named on the command line always.
SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".mk", ".sbatch", ".slurm")
SCRIPT_NAMES = ("Makefile", "makefile", "GNUmakefile")
_SHEBANG = re.compile(rb"#![ \t]*(?:/usr)?(?:/local)?/bin/(?:env[ \t]+)?(?:ba|z|da|k)?sh\b")


class Unparsable(UsageError):
    """A file that is neither YAML nor JSON (an unrendered template, tabs): among others, lint passes it over."""


class Node(dict):
    """A YAML mapping with the file it was read from, the line it starts on (1-based) and each key's line."""

    line: int | None = None
    source: str | None = None
    key_lines: dict[Any, int] = {}  # noqa: RUF012 (never written: each parsed mapping gets its own)


class Tagged:
    """A value under compose's `!reset` or `!override` tag (compose-go's merge): `!reset` takes the key away from
    what the files before set, `!override` replaces it instead of merging. Resolved by probe/compose_merge. In a
    GitLab file, `!reference [job, key, ...]` (resolved by probe/ci)."""

    __slots__ = ("tag", "value")

    def __init__(self, tag: str, value: Any):
        self.tag, self.value = tag, value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tagged) and (self.tag, self.value) == (other.tag, other.value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{self.tag} {self.value!r}"


COMPOSE_TAGS = ("!reset", "!override")
GITLAB_NAMES = (".gitlab-ci.yml", ".gitlab-ci.yaml")
GITLAB_REFERENCE = "!reference"  # GitLab's tag for another job's key: `!reference [.setup, script]`


def with_changes(mapping: dict, **changes: Any) -> dict:
    """A copy of a mapping with `changes`, keeping the line it was read at (a report's file:line)."""
    out = copy.copy(mapping)
    out.update(changes)
    return out


def line_of(node: Any) -> int | None:
    return getattr(node, "line", None)


def where(source: str, node: Any = None) -> str:
    """'file:line' for an error message, or 'file' when the line is not known (JSON)."""
    line = line_of(node)
    return f"{source}:{line}" if line else source


def target(kind: Literal["service", "workload"], source: str, name: str, node: Any, id: str | None = None) -> Target:
    """A target defined in a file: named <source>:<name>, with the file and the line of `node`, its definition."""
    return Target(kind, f"{source}:{name}", id, file=source, line=line_of(node))


@dataclass(frozen=True)
class Document:
    source: str  # the path as given or found, or <stdin>
    index: int  # 0-based position in a multi-document file
    body: Any


def _yaml_loader(source: str | None = None, unknown_tags: bool = False):
    """PyYAML's safe loader with lines on mappings; `unknown_tags`: any local tag (CloudFormation's !Ref, !Sub, ...)
    read as an Unknown value, said as written, instead of an error."""
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
        out.line, out.source = node.start_mark.line + 1, source
        out.key_lines = {key: key_node.start_mark.line + 1 for (key_node, _), (key, _) in zip(node.value, pairs)}
        return out

    def tagged(loader, node):
        if isinstance(node, yaml.MappingNode):
            value = mapping(loader, node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:  # the scalar as plain YAML would read it: `!override 1g`, `!reset null`
            plain = yaml.ScalarNode(loader.resolve(yaml.ScalarNode, node.value, (True, False)), node.value)
            value = loader.construct_object(plain)
        return Tagged(node.tag, value)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    for tag in COMPOSE_TAGS:
        Loader.add_constructor(tag, tagged)
    if source is not None and source.endswith(GITLAB_NAMES):  # resolved by probe/ci.py
        Loader.add_constructor(GITLAB_REFERENCE, tagged)
    if unknown_tags:

        def unknown(loader, suffix, node):
            if isinstance(node, yaml.ScalarNode):
                value = node.value
            else:  # !If [cond, a, b], !Join [...]: its scalars as written
                items = node.value if isinstance(node, yaml.SequenceNode) else []
                value = "[" + ", ".join(i.value if isinstance(i, yaml.ScalarNode) else "..." for i in items) + "]"
            return Unknown(f"!{suffix} {value}"[:200])

        Loader.add_multi_constructor("!", unknown)  # after compose's own: those win
    return yaml, Loader


# Inside keeping(): each text's parse (source, unknown_tags, digest) -> its bodies pickled as parsed, or None
_KEPT: ContextVar[dict[tuple[str, bool, str], bytes | None] | None] = ContextVar("kept", default=None)


@contextmanager
def keeping() -> Iterator[None]:
    """Each text parsed once while inside: lint --fix parses a file to judge it, edits a copy of that parse, parses
    the text it writes to check it and judges that text again; a text parsed before is a fresh copy of that parse
    (pickled as parsed, before anyone could change it), never a second parse (two of four parses of a manifest of
    2,000 pods)."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def parse(text: str, source: str, unknown_tags: bool = False) -> list[Document]:
    """All documents of one input; empty documents (a trailing `---`) are dropped. UsageError with file:line.
    `unknown_tags`: YAML's local tags (`!Ref x`) are Unknown values, not errors.
    Bounded: JSON up to MAX_JSON_BYTES, YAML up to MAX_YAML_BYTES, nesting up to MAX_DEPTH, MAX_NODES values once
    YAML's aliases are expanded, numbers of MAX_DIGITS digits, no NaN or Infinity, no lone surrogate."""
    kept = _KEPT.get()
    if kept is None:
        return _parse(text, source, unknown_tags)
    key = (source, unknown_tags, digest(text))
    copied = kept.get(key)
    if copied is not None:
        return [Document(source, i, body) for i, body in pickle.loads(copied)]
    docs = _parse(text, source, unknown_tags)
    try:
        kept[key] = pickle.dumps([(d.index, d.body) for d in docs], pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):  # parsed again when asked again
        kept[key] = None
    return docs


def _parse(text: str, source: str, unknown_tags: bool) -> list[Document]:
    if source.endswith(".json") or (source == STDIN and text.lstrip()[:1] in ("{", "[")):
        try:
            return [Document(source, 0, body) for body in [_json(text, source)] if body is not None]
        except json.JSONDecodeError as e:
            if source != STDIN:
                raise Unparsable(f"{source}:{e.lineno}: not JSON: {e.msg}") from None
    if len(text) > MAX_YAML_BYTES:
        raise UsageError(
            f"{source}: {_mib(len(text))} of YAML is more than the {_mib(MAX_YAML_BYTES)} shmdoctor reads "
            f"(JSON is read up to {_mib(MAX_JSON_BYTES)}: kubectl get ... -o json)"
        )
    yaml, loader = _yaml_loader(source, unknown_tags)
    try:
        _check_yaml(yaml, loader, text, source)
        bodies = list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        long = _long_key(text, mark)
        if long:
            raise Unparsable(f"{source}{at}: a key of {long:,} characters: YAML reads a key of at most 1,024") from None
        raise Unparsable(f"{source}{at}: not YAML: {problem}") from None
    return [Document(source, i, body) for i, body in enumerate(bodies) if body is not None]


def _long_key(text: str, mark: Any) -> int | None:
    """The length of the key before the ':' that a YAML error at `mark` stopped on, where it is over the 1,024
    characters YAML reads a key in (YAML 1.2's implicit keys; libyaml's simple keys); else None."""
    lines = text.split("\n")
    if mark is None or mark.line >= len(lines):
        return None
    head = lines[mark.line][: max(0, lines[mark.line].rfind(":", 0, mark.column + 1))]
    key = re.sub(r"^\s*(?:[-?]\s+)*", "", head[max(map(head.rfind, "{[,")) + 1 :]).strip()
    return len(key) if len(key) > 1024 else None


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB".replace(".0 MiB", " MiB")


def _check_yaml(yaml: Any, loader: type, text: str, source: str) -> None:
    """Walk the YAML's events before it is composed and constructed: libyaml's parser keeps its own stack (no
    recursion, whatever the nesting), its composer recurses in C (100,000 levels are a segmentation fault). Nesting
    up to MAX_DEPTH; at most MAX_NODES values in the file with every alias expanded (an alias counts the values of
    what it names, merge keys included: a 600-byte alias bomb names 10^9); numbers of at most MAX_DIGITS digits."""
    open_: list[list] = []  # [values inside it so far, its anchor] for each mapping or sequence open
    sizes: dict[str, int] = {}  # anchor -> the values it names, once its node is complete
    total = 0  # values of the file so far, aliases expanded

    def add(n: int, line: int) -> None:
        nonlocal total
        total += n
        if total > MAX_NODES:
            raise UsageError(
                f"{source}:{line}: more than {MAX_NODES:,} values once its aliases are expanded (an alias bomb?)"
            )
        if open_:
            open_[-1][0] += n

    for event in yaml.parse(text, Loader=loader):
        line = event.start_mark.line + 1
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(open_) >= MAX_DEPTH:
                raise UsageError(f"{source}:{line}: nested deeper than {MAX_DEPTH} levels of mappings and lists")
            if event.anchor:
                sizes.pop(event.anchor, None)  # from here on the name is this node's, not yet complete
            open_.append([0, event.anchor])
            add(1, line)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            count, anchor = open_.pop()  # its values, each counted in the total as it came
            if open_:
                open_[-1][0] += count  # and in its parent's
            if anchor:
                sizes[anchor] = count + 1
        elif isinstance(event, yaml.ScalarEvent):
            if event.implicit[0] and len(event.value) > MAX_DIGITS and _is_number(yaml, loader, event.value):
                raise UsageError(f"{source}:{line}: a number of {len(event.value)} digits (at most {MAX_DIGITS})")
            if event.anchor:
                sizes[event.anchor] = 1
            add(1, line)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes and any(anchor == event.anchor for _, anchor in open_):
                raise UsageError(f"{source}:{line}: the alias *{event.anchor} is inside what it names (recursive)")
            add(sizes.get(event.anchor, 1), line)
        elif isinstance(event, yaml.DocumentEndEvent):
            sizes.clear()  # anchors are per document


def _is_number(yaml: Any, loader: Any, value: str) -> bool:
    tag = loader.resolve(loader, yaml.ScalarNode, value, (True, False))
    return tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


def _json(text: str, source: str) -> Any:
    """JSON with its numbers bounded (no NaN or Infinity, at most MAX_DIGITS digits), its nesting and its strings
    checked: JSONDecodeError for a syntax error, UsageError for the rest."""

    def constant(name: str) -> Any:
        at = _line_of(text, r"[:,[]\s*-?" + name)
        raise UsageError(f"{source}{at}: {name} is not a number (JSON has no NaN or Infinity)")

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_DIGITS:
            raise UsageError(f"{source}: a number of {len(digits)} digits (at most {MAX_DIGITS})")
        return int(digits)

    try:
        body = json.loads(text, parse_constant=constant, parse_int=integer)
    except RecursionError:
        raise UsageError(f"{source}: nested deeper than {MAX_DEPTH} levels of objects and arrays") from None
    _check_json(body, text, source)
    return body


def _check_json(body: Any, text: str, source: str) -> None:
    """Nesting up to MAX_DEPTH, and no lone surrogate (JSON allows "\\ud800"; no file or terminal can hold it),
    walked without recursion."""
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise UsageError(f"{source}: nested deeper than {MAX_DEPTH} levels of objects and arrays")
            if isinstance(value, dict):
                stack.extend((key, depth) for key in value)  # keys are strings: checked as values
                stack.extend((item, depth + 1) for item in value.values())
            else:
                stack.extend((item, depth + 1) for item in value if isinstance(item, (dict, list, str)))
        elif isinstance(value, str) and _SURROGATE.search(value):
            raise UsageError(f"{source}{_line_of(text, _LONE_SURROGATE)}: {ascii(value)[:60]} holds a lone surrogate")


_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE_SURROGATE = (  # the escape of a high surrogate without its low one, or of a low one alone
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<![0-9a-fA-F]{4})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _line_of(text: str, pattern: str) -> str:
    """':line' of the first match of pattern in text, or '' (a line only helps; the message stands without it)."""
    found = re.search(pattern, text)
    return f":{text.count(chr(10), 0, found.start()) + 1}" if found else ""


def is_jenkinsfile(path: str) -> bool:
    """Jenkinsfile, Jenkinsfile.NAME, NAME.Jenkinsfile or NAME.jenkinsfile: the names Jenkins users give pipelines."""
    name = os.path.basename(path)
    return name == "Jenkinsfile" or name.startswith("Jenkinsfile.") or name.endswith((".jenkinsfile", ".Jenkinsfile"))


def is_script(path: str) -> bool:
    """A script by its name (*.sh, *.bash, *.zsh, *.mk, *.sbatch, *.slurm, Makefile, a Jenkinsfile) or, without a
    suffix, by a shebang that names a shell (#!/bin/sh, #!/usr/bin/env bash)."""
    name = os.path.basename(path)
    if name.endswith(SCRIPT_SUFFIXES) or name in SCRIPT_NAMES or is_jenkinsfile(path):
        return True
    if "." in name or not os.path.isfile(path):  # a FIFO or a device is never opened here
        return False
    try:
        with open(path, "rb") as f:
            return _SHEBANG.match(f.read(64)) is not None
    except OSError:
        return False


def files(path: str, scripts: bool = True) -> Iterator[str]:
    """The inputs a path names: '-', the file itself, or a directory's *.yml, *.yaml, *.json, *.container, *.pod and
    (with `scripts`) scripts, recursively; hidden folders are skipped but .devcontainer and .github."""
    if path == "-":
        yield path
    elif os.path.isdir(path):
        found = False
        base = path.rstrip(os.sep).count(os.sep)
        for root, dirs, names in os.walk(path):
            if root.count(os.sep) - base > MAX_DEPTH:  # os.walk recurses: 1000 levels would be a RecursionError
                raise UsageError(f"{root[:80]}...: directories nested deeper than {MAX_DEPTH} levels")
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d in (".devcontainer", ".github"))
            for name in sorted(names):
                if (
                    name.endswith(SUFFIXES)
                    or name.endswith(TEMPLATES)
                    or scripts
                    and is_script(os.path.join(root, name))
                ):
                    found = True
                    yield os.path.join(root, name)
        if not found:
            raise UsageError(f"{path}: no *.yml, *.yaml, *.json, *.container file or script in this directory")
    elif os.path.exists(path):
        yield path
    else:
        raise UsageError(f"{path}: no such file or directory")


def text(name: str) -> str:
    """A file's text (or stdin's, for '-'), as UTF-8, at most MAX_JSON_BYTES; UsageError when it cannot be read.
    A FIFO or a device (/dev/zero) is refused, never waited on or read without end (open_regular)."""
    if name == "-":
        return _read_stdin()
    with open_regular(name) as f:
        try:
            return _decoded(f.read(MAX_JSON_BYTES + 1), name)
        except OSError as e:
            raise UsageError(f"{name}: cannot read: {_reason(e)}") from None


def digest(text: str) -> str:
    """What tells a text from another (lint --fix: the file it judged is the file it writes)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read_stdin() -> str:
    """stdin as UTF-8, as files are read, at most MAX_JSON_BYTES; UsageError when it is closed or not text."""
    if sys.stdin is None:  # started with fd 0 closed
        raise UsageError(f"{STDIN}: cannot read: standard input is closed")
    stream = getattr(sys.stdin, "buffer", None)  # the bytes, so that the locale does not decide the encoding
    try:
        data = stream.read(MAX_JSON_BYTES + 1) if stream is not None else sys.stdin.read(MAX_JSON_BYTES + 1)
    except OSError as e:
        raise UsageError(f"{STDIN}: cannot read: {_reason(e)}") from None
    return data if isinstance(data, str) else _decoded(data, STDIN)


def _decoded(data: bytes, source: str) -> str:
    if len(data) > MAX_JSON_BYTES:
        raise UsageError(f"{source}: more than the {_mib(MAX_JSON_BYTES)} shmdoctor reads from one input")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{source}: cannot read: {_reason(e)}") from None


def _reason(e: OSError | UnicodeDecodeError) -> str:
    return getattr(e, "strerror", None) or str(e)


@dataclass(frozen=True)
class Definition:
    """One target read from a file: its facts and, where it carries one, its own loader spec (unparsed)."""

    facts: Facts
    loader_spec: str | None = None
    loader_at: str = ""  # file:line of the spec, for its error message
    notes: tuple[str, ...] = ()  # what was assumed to read it (the operator that shapes its pod), for the report
    ignore_label: str | None = None  # its shmdoctor.ignore label or annotation, as written
    ignore: Ignore | None = None  # the rules it ignores (that label, or a comment at its line): files.read fills it
