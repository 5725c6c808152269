"""Dev containers (`.devcontainer/devcontainer.json`, `.devcontainer.json`: JSON with comments and trailing commas, as
the devcontainers CLI reads it) -> the Facts of the container it starts.

The CLI runs `docker run` with `runArgs` as they are (one argument each, no shell), `mounts` as `--mount`, the
`containerEnv`, and `--gpus all` where `hostRequirements.gpu` is `true` or `"optional"` (on a host with GPUs):
runargs.py reads them as the engine does. `${localEnv:VAR}` and the like are unknown. A devcontainer made from a
compose file (`dockerComposeFile`) runs its service as compose does: judged in that file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..model import Target
from . import documents
from .documents import Definition
from .runargs import Arg, RunArgs, facts, parse

NAMES = ("devcontainer.json", ".devcontainer.json")


def is_devcontainer(path: str) -> bool:
    return os.path.basename(path) in NAMES


def plain_json(text: str) -> str:
    """JSONC as JSON of the same length: comments and trailing commas blanked (newlines kept), strings untouched,
    so that every offset and line of the text is that of the file."""
    out = list(text)
    i, n = 0, len(text)
    last = -1  # the offset of the last comma outside strings and comments, while only blanks follow it
    while i < n:
        c = text[i]
        if c == '"':
            i = _string_end(text, i)
            last = -1
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if c == "/" and text[i + 1] == "/" else text.find("*/", i + 2)
            end = n if end < 0 else end + (0 if text[i + 1] == "/" else 2)
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            i = end
            continue
        if c == ",":
            last = i
        elif c in "]}" and last >= 0:
            out[last] = " "
            last = -1
        elif not c.isspace():
            last = -1
        i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int:
    """The offset after the string that starts at i (its closing quote), or the text's end."""
    i += 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return len(text)


def load(text: str, source: str) -> Any:
    """The body of a JSONC text, bounded as JSON is (documents.parse); UsageError naming the line of a syntax error
    (a devcontainer.json that does not parse is bad input, not another format)."""
    try:
        docs = documents.parse(plain_json(text), source if source.endswith(".json") else source + ".json")
    except documents.Unparsable as e:
        raise UsageError(
            str(e).replace(".json.json:", ".json:").replace("not JSON", "not JSON with comments")
        ) from None
    if not docs or not isinstance(docs[0].body, dict):
        raise UsageError(f"{source}: a devcontainer.json must be an object")
    return docs[0].body


@dataclass(frozen=True)
class Placed:
    """A devcontainer's run arguments as placed in its text: each runArgs string's span; `at` the `[` of runArgs
    (a new argument goes after it), or the object's `{` where there is no runArgs (`listed` False)."""

    run: RunArgs
    listed: bool
    indent: str  # the indentation of the object's keys


def placed(text: str, source: str) -> Placed:
    body = load(text, source)
    plain = plain_json(text)
    spans, bracket, brace = _run_args_spans(plain)
    args = []
    values = body.get("runArgs")
    if values is not None and not isinstance(values, list):
        raise UsageError(f"{source}: runArgs must be a list of strings")
    if len(spans) != len(values or []):  # runArgs given twice: the last is the one read, not placed here
        spans = [(-1, -1)] * len(values or [])
    for value, (start, end) in zip(values or [], spans):
        if not isinstance(value, str):
            raise UsageError(f"{source}: runArgs: {value!r} is not a string (each is one argument of docker run)")
        args.append(Arg(value, start, end, unknown="${" in value))
    args += [Arg(a) for a in _mounts(body.get("mounts"), source)]
    gpu = (body.get("hostRequirements") or {}).get("gpu") if isinstance(body.get("hostRequirements"), dict) else None
    if gpu is True or gpu == "optional" or isinstance(gpu, dict):
        args += [Arg("--gpus"), Arg("all")]
    env = body.get("containerEnv")
    for name, value in env.items() if isinstance(env, dict) else []:
        args += [Arg("-e"), Arg(f"{name}={value}", unknown="${" in str(value))]
    at = Arg("runArgs", bracket, bracket + 1) if bracket >= 0 else Arg("{", brace, brace + 1)
    key = re.search(r"\n([ \t]+)\"", plain)
    return Placed(parse(args, "docker", at, image=False), bracket >= 0, key.group(1) if key else "\t")


def _mounts(mounts: Any, source: str) -> list[str]:
    """`mounts` as --mount arguments: a string as it is, an object's source, target and type."""
    out = []
    for mount in mounts if isinstance(mounts, list) else []:
        if isinstance(mount, str):
            out += ["--mount", mount]
        elif isinstance(mount, dict):
            fields = {k: mount.get(k) for k in ("type", "source", "target") if mount.get(k) is not None}
            out += ["--mount", ",".join(f"{k}={v}" for k, v in fields.items())]
    return out


def _run_args_spans(plain: str) -> tuple[list[tuple[int, int]], int, int]:
    """([(start, end) of each string in the top object's runArgs], the offset of its `[` or -1, of the `{`)."""
    depth, key, brace, expect_key = 0, None, -1, False
    i = 0
    while i < len(plain):
        c = plain[i]
        if c == '"':
            end = _string_end(plain, i)
            if depth == 1 and expect_key:
                key = json.loads(plain[i:end])
            i = end
            continue
        if c == "[" and depth == 1 and key == "runArgs":
            return _strings(plain, i), i, brace
        if c in "{[":
            depth += 1
            if depth == 1:
                brace, expect_key = i, c == "{"
        elif c in "}]":
            depth -= 1
        elif depth == 1 and c in ",:":
            expect_key = c == ","
        i += 1
    return [], -1, brace


def _strings(plain: str, i: int) -> list[tuple[int, int]]:
    """The spans of the strings of the array that opens at i, up to its `]`."""
    spans = []
    i += 1
    while i < len(plain) and plain[i] != "]":
        if plain[i] == '"':
            end = _string_end(plain, i)
            spans.append((i, end))
            i = end
        else:
            i += 1
    return spans


def probe(text: str, source: str) -> tuple[list[Definition], str | None]:
    """The container a devcontainer.json starts; for a compose-based one, none and why."""
    body = load(text, source)
    if "dockerComposeFile" in body:
        return [], f"{source}: a devcontainer made from a compose file (dockerComposeFile): its service is judged there"
    found = placed(text, source)
    image = body.get("image") if isinstance(body.get("image"), str) else None
    name = body.get("name") if isinstance(body.get("name"), str) and body.get("name") else None
    target = Target("container", f"{source}:devcontainer", id=name, file=source, line=1)
    read = facts(found.run, target, assumed_image=image, form="devcontainer")
    return [Definition(read.facts, read.loader_spec, source, ignore_label=read.ignore_label)], None
