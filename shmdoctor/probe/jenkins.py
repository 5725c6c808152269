"""Jenkinsfiles -> the Facts of each docker agent and each `sh` step's docker run.

The Docker Pipeline plugin starts an agent's container as `docker run -t -d -u UID:GID [args] -w WORKSPACE -v ...
IMAGE cat` (declarative `agent { docker { image '...' args '...' } }`, or `dockerfile { args '...' }`, or `dockerfile
true`: the repository's Dockerfile without args; scripted `docker.image('...').inside('...')`, and `.withRun('...')`
and `.run('...')`, which start the container beside the steps): `args` is docker's flags in one string, read as the
engine reads them (runargs.py); a Groovy `${...}` in it is unknown. A `sh '...'` step's text is a shell script: its
docker run commands are read as a script's (shell.py), with the pipeline's own strings put in where it names them
(`environment { NAME = "..." }` and `env.NAME = ...` as the shell's environment; in a "..." step also Groovy's `def
NAME = "..."` and `NAME = "..."`), each set to one value on one line; others stay unknown. Each is named
`<file>:<line>`. The Groovy is not run: strings are read as they are written, single, double or triple quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from ..errors import UsageError
from ..limits import MAX_SCRIPT_BYTES
from ..model import Target
from . import shell
from .documents import Definition
from .runargs import Arg, RunArgs, facts, parse

_STRING = r"(?P<q>'''|\"\"\"|'|\")(?P<body>.*?)(?P=q)"
_AGENT = re.compile(r"\b(?P<kind>docker|dockerfile)\s*\{", re.S)
_SHORTHAND = re.compile(r"\bdockerfile\s+(?P<true>true)\b")  # the Dockerfile at the repository's root, no args
_IMAGE = re.compile(r"\bimage\s+" + _STRING, re.S)
_ARGS = re.compile(r"\bargs\s+" + _STRING, re.S)
# scripted: .inside('args') runs the steps in the container, .withRun('args', 'command') and .run(...) start it
_INSIDE = re.compile(r"docker\.image\(\s*" + _STRING + r"\s*\)\s*\.(?:inside|withRun|run)\b", re.S)
_CALL = re.compile(r"\s*\(\s*(?:" + _STRING + r")?\s*(?P<close>[),])?", re.S)  # ('args'...), (), (a Groovy value)
_SH = re.compile(r"\bsh\s*\(?\s*(?:script\s*:\s*)?" + _STRING, re.S)
_ASSIGN = re.compile(
    r"(?:^|(?<=[{;]))[ \t]*(?P<env>env\.)?(?:def[ \t]+)?(?P<name>[A-Za-z_]\w*)[ \t]*=[ \t]*" + _STRING, re.M | re.S
)
_ENVIRONMENT = re.compile(r"\benvironment\s*\{")
_REF = re.compile(r"(?P<esc>\\?)\$(?:\{(?:env\.)?(?P<braced>[A-Za-z_]\w*)\}|(?:env\.)?(?P<bare>[A-Za-z_]\w*))")


@dataclass(frozen=True)
class Agent:
    """One docker agent: its line, image, run arguments; where its args string's text lies (`body` span, or -1),
    and where a new `args` would go (declarative: after the image's string; scripted: the `.inside` call;
    `dockerfile true`: the span of its `true`, which a block with the args replaces)."""

    line: int
    image: str | None
    run: RunArgs
    body: tuple[int, int]
    insert_at: int
    declarative: bool
    shorthand: tuple[int, int] = (-1, -1)


def agents(text: str, source: str) -> Iterator[Agent]:
    """The docker agents of a Jenkinsfile, declarative and scripted, in the order written."""
    lines = shell.Lines(text)
    for match in _AGENT.finditer(text):
        end = _block_end(text, match.end())
        block = text[match.end() : end]
        image = _IMAGE.search(block)
        args = _ARGS.search(block)
        if match.group("kind") == "docker" and image is None:
            continue  # `docker { ... }` of something else (a label block)
        body = (match.end() + args.start("body"), match.end() + args.end("body")) if args else (-1, -1)
        after = match.end() + (image.end() if image else 0)
        name = image.group("body") if image else None
        yield _agent(text, source, lines.at(match.start()), name, body, after, declarative=True)
    for match in _SHORTHAND.finditer(text):
        agent = _agent(text, source, lines.at(match.start()), None, (-1, -1), match.end(), declarative=True)
        yield replace(agent, shorthand=match.span("true"))
    for match in _INSIDE.finditer(text):
        call = _CALL.match(text, match.end())
        given = call is not None and call.group("body") is not None
        body = (call.start("body"), call.end("body")) if call and given else (-1, -1)
        # before the call's `)`; after `.inside` ({ ... }); none where its args are a Groovy value
        at = match.end() if call is None else call.end() - 1 if call.group("close") == ")" and not given else -1
        yield _agent(text, source, lines.at(match.start()), match.group("body"), body, at, declarative=False)


def _agent(
    text: str, source: str, line: int, image: str | None, body: tuple[int, int], at: int, declarative: bool
) -> Agent:
    words = shell.words_in(text, body[0], body[1], source) if body[0] >= 0 else []
    run = parse(words, "docker", Arg("args", at, at), image=False)
    return Agent(line, image if image and "${" not in image else None, run, body, at, declarative)


def _block_end(text: str, start: int) -> int:
    """The offset of the `}` that closes a block opened just before start (strings skipped), or the text's end."""
    depth, i = 1, start
    while i < len(text):
        quoted = re.match(_STRING, text[i : i + 4096], re.S) if text[i] in "'\"" else None
        if quoted:
            i += quoted.end()
            continue
        depth += (text[i] == "{") - (text[i] == "}")
        if depth == 0:
            return i
        i += 1
    return len(text)


def sh_steps(text: str) -> list[tuple[int, int]]:
    """Where the text of each `sh` step lies: read as a shell script."""
    return [(m.start("body"), m.end("body")) for m in _SH.finditer(text)]


def _variables(text: str) -> dict[str, tuple[str, bool]]:
    """The pipeline's strings set once: name -> (value, in the sh step's environment). A name set to two values, or
    to one of several lines, is not known."""
    blocks = [(m.end(), _block_end(text, m.end())) for m in _ENVIRONMENT.finditer(text)]
    found: dict[str, tuple[str, bool]] = {}
    twice: set[str] = set()
    for m in _ASSIGN.finditer(text):
        value = re.sub(r"\\\n", "", m.group("body"))  # Groovy's line continuation
        value = re.sub(r"\\([$\\\"'])", r"\1", value)
        exported = bool(m.group("env")) or any(start <= m.start() < end for start, end in blocks)
        name = m.group("name")
        if "\n" in value or (name in found and found[name][0] != value):
            twice.add(name)
        found[name] = (value, exported)
    return {name: kept for name, kept in found.items() if name not in twice}


def _value(ref: re.Match, known: dict[str, tuple[str, bool]], groovy: bool) -> str:
    """A reference's value: an exported string's (the shell's environment), a Groovy string's where Groovy reads the
    reference (a "..." step's unescaped ${NAME}), else the reference as written."""
    name = ref.group("braced") or ref.group("bare")
    value, exported = known.get(name, ("", False))
    return value if name in known and (exported or (groovy and not ref.group("esc"))) else ref.group(0)


def steps(text: str) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
    """The text with the pipeline's strings put into the sh steps that name them; where the steps that name none
    lie in the text, and where the others lie in the new text (on the same lines: no value has a line break)."""
    known = _variables(text) if "=" in text else {}
    plain, named, parts, at, shift = [], [], [], 0, 0
    for m in _SH.finditer(text):
        groovy = m.group("q").startswith('"')  # a "..." step is a Groovy GString: its ${NAME} is Groovy's
        body = _REF.sub(lambda ref, g=groovy: _value(ref, known, g), m.group("body")) if known else m.group("body")
        if body == m.group("body"):
            plain.append((m.start("body"), m.end("body")))
            continue
        parts += [text[at : m.start("body")], body]
        named.append((m.start("body") + shift, m.start("body") + shift + len(body)))
        at, shift = m.end("body"), shift + len(body) - len(m.group("body"))
    expanded = "".join([*parts, text[at:]])
    if len(expanded) > max(MAX_SCRIPT_BYTES, len(text)):
        raise UsageError(f"more than {MAX_SCRIPT_BYTES // 2**20} MiB of sh steps once the pipeline's strings are in")
    return expanded, plain, named


# Groovy's lexemes that hold quotes: comments, then strings (triple-quoted ones span lines; ' and " end on theirs)
_LEXEME = re.compile(r"//|/\*|'''|\"\"\"|'|\"")
_CLOSE = {
    "/*": re.compile(r"[\s\S]*?\*/"),
    "'''": re.compile(r"(?:\\[\s\S]|[^\\])*?'''"),
    '"""': re.compile(r'(?:\\[\s\S]|[^\\])*?"""'),
    "'": re.compile(r"(?:\\[\s\S]|[^\\'\n])*'"),
    '"': re.compile(r'(?:\\[\s\S]|[^\\"\n])*"'),
}


def _unclosed(text: str) -> tuple[int, str] | None:
    """(where, what) of the first string or comment that Groovy's lexer would find never closed, or None: such a
    Jenkinsfile does not compile, so Jenkins runs none of it."""
    at = 0
    while (found := _LEXEME.search(text, at)) is not None:
        opened = found.group()
        if opened == "//":
            end = text.find("\n", found.end())
            at = len(text) if end < 0 else end
            continue
        closed = _CLOSE[opened].match(text, found.end())
        if closed is None:
            return found.start(), opened
        at = closed.end()
    return None


def probe(text: str, source: str) -> list[Definition]:
    """One Definition per docker agent and per docker run of an `sh` step; UsageError for a file Groovy would not
    compile because a string or a comment is never closed (its args cannot be told from what follows)."""
    unclosed = _unclosed(text)
    if unclosed is not None:
        at, opened = unclosed
        where = f"{source}:{shell.Lines(text).at(at)}"
        said = "comment" if opened == "/*" else "string"
        rest = "" if len(opened) > 1 else " on its line"
        raise UsageError(f"{where}: a {opened} {said} is not closed{rest}: Groovy would not compile this Jenkinsfile")
    out = []
    for agent in agents(text, source):
        target = Target("container", f"{source}:{agent.line}", file=source, line=agent.line)
        try:
            read = facts(agent.run, target, assumed_image=agent.image, form="jenkins")
        except UsageError as e:
            raise UsageError(f"{source}:{agent.line}: {e}") from None
        out.append(Definition(read.facts, read.loader_spec, f"{source}:{agent.line}", ignore_label=read.ignore_label))
    try:
        expanded, plain, named = steps(text)
    except UsageError as e:
        raise UsageError(f"{source}: {e}") from None
    for script, regions in ((text, plain), (expanded, named)):
        out += shell.probe(script, source, regions) if regions else []  # no regions: no step (not the whole text)
    return sorted(out, key=lambda d: d.facts.target.line or 0)
