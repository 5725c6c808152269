"""Shell scripts and Makefiles -> one Facts per `docker run` / `podman run` / `nerdctl run` command line in them.

The text is split into simple commands as a shell splits it (quotes, backslash continuations, `;` `&&` `||` `|`
`&` newlines, comments), bounded and in linear time: no shell runs. What only a run would tell is unknown, never
guessed: `$VAR`, `${VAR}`, `$(...)`, backquotes and a Makefile's `$(VAR)`. A command inside `$(...)` or backquotes
(`CID=$(docker run -d ...)`) is a command too. Before the engine's name a command may have assignments (`A=1`),
`sudo` (and its options), `exec`, `env`, `time`, `nohup`, `nice`, `command`, or a recipe's `@`, `-`, `+`; after it,
the engine's global options, then `run`, `create`, or `container run|create`. Each such command is read as the engine
reads its arguments (runargs.py) and named `<file>:<line>` (the line its engine's name is on).
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import UsageError
from ..model import SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Shm, Target
from . import documents
from .documents import Definition
from .runargs import ENGINES, Arg, RunArgs, facts, parse
from .workload import idle, ml_signs, serving

MAX_NESTING = 16  # $(...) and backquotes inside each other
MAX_COMMANDS = 100_000  # simple commands in one file
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Global options of the engines that take a value (docker -H host run ..., podman --root DIR run ...)
_GLOBAL_VALUED = {
    "-H", "--host", "-c", "--context", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey",
    "--root", "--runroot", "--url", "--connection", "--cgroup-manager", "--runtime", "--storage-driver",
    "--namespace", "-n", "--address", "-a", "--cni-path",
}  # fmt: skip
_SUDO_VALUED = {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}
_PREFIXES = frozenset(("exec", "time", "nohup", "command", "builtin", "!", "then", "do", "else", "{"))


@dataclass(frozen=True)
class Run:
    """One run command of a script, with the line its engine's name is on."""

    line: int
    args: RunArgs


def runs(text: str, source: str, regions: list[tuple[int, int]] | None = None) -> Iterator[Run]:
    """Every docker/podman/nerdctl run command of the text, in the order they are written. In a Makefile, make's
    own variables ($(NAME), ${NAME}, even in single quotes) are unknown and `$$` is the shell's `$`."""
    lines = Lines(text)
    make = os.path.basename(source).endswith(".mk") or os.path.basename(source) in documents.SCRIPT_NAMES[:3]
    for command in _commands(text, source, make, regions):
        found = _run(command)
        if found is not None:
            engine_at, engine, after, words = found
            line = lines.at(engine_at.start)
            try:
                yield Run(line, parse(words, engine, after))
            except UsageError as e:
                raise UsageError(f"{source}:{line}: {e}") from None


def probe(text: str, source: str, regions: list[tuple[int, int]] | None = None) -> list[Definition]:
    """One Definition per run command (of the regions given, else the whole text), named <source>:<line>."""
    out = []
    for run in runs(text, source, regions):
        name = f"{source}:{run.line}"
        try:
            read = facts(run.args, Target("container", name, file=source, line=run.line))
        except UsageError as e:
            raise UsageError(f"{source}:{run.line}: {e}") from None
        out.append(Definition(read.facts, read.loader_spec, f"{source}:{run.line}", ignore_label=read.ignore_label))
    out += _pyxis(text, source, regions)
    return sorted(out, key=lambda d: d.facts.target.line or 0)


# srun's short options that take a value (-N 2, -n 8, -G 4, ...), for the command after them
_SRUN_VALUED = {"-N", "-n", "-c", "-G", "-p", "-t", "-J", "-o", "-e", "-w", "-A", "-q", "-C", "-D", "-m", "-x"}
_GPU_OPTION = re.compile(r"^--(?:gpus|gpus-per-node|gpus-per-task)=(\S+)$|^--gres=(?:\S*,)?gpu(?::[\w-]+)?:(\d+)")
PYXIS = (
    "pyxis/enroot (srun --container-image): the compute node's /dev/shm, no mount of its own (inferred: enroot "
    "makes no IPC namespace); check it with `srun df -h /dev/shm`"
)


def _pyxis(text: str, source: str, regions: list[tuple[int, int]] | None) -> list[Definition]:
    """srun with pyxis's --container-image: the job runs in a container that keeps the node's /dev/shm, whose size
    only the node tells. GPUs from srun's options or the script's #SBATCH lines."""
    lines = Lines(text)
    sbatch = [w for line in re.findall(r"^#SBATCH[ \t]+(.*)$", text, re.M) for w in line.split()]
    out = []
    for command in _commands(text, source, False, regions):
        words = [w.text for w in command]
        start = next((i for i, w in enumerate(words) if os.path.basename(w) == "srun"), None)
        if start is None or not any(w.startswith("--container-image") for w in words[start:]):
            continue
        i, options = start + 1, []
        while i < len(words) and words[i].startswith("-"):
            options.append(words[i])
            i += 2 if words[i] in _SRUN_VALUED or words[i] == "--container-image" else 1
        image = next((w.split("=", 1)[1] for w in options if w.startswith("--container-image=")), None)
        if image is None and "--container-image" in words:
            image = (
                words[words.index("--container-image") + 1]
                if words.index("--container-image") + 1 < len(words)
                else None
            )
        gpus = next((m.group(1) or m.group(2) for w in options + sbatch if (m := _GPU_OPTION.match(w))), None)
        line = lines.at(command[start].start)
        facts = Facts(
            target=Target("container", f"{source}:{line}", file=source, line=line),
            shm=Shm.unmeasured(None, "host", PYXIS),
            ipc=Ipc("host"),
            memory=Memory(None, None),
            runtime="container",
            gpus=gpus,
            ml_signs=ml_signs(image, words[i:]),
            server=serving(image, words[i:]),
            flags=idle(image, words[i:]),
            unreadable=(f"{SHM_SIZE_UNKNOWN} ({PYXIS})",),
            form="shell",
        )
        out.append(Definition(facts, None, f"{source}:{line}"))
    return out


def words(text: str, at: str) -> list[Arg]:
    """A string of arguments (a CI container's `options`) split as a shell splits it, each placed in the string;
    `$VAR`, `${{ ... }}` and `$(...)` unknown."""
    return words_in(text, 0, len(text), at)


def words_in(text: str, start: int, end: int, at: str) -> list[Arg]:
    """The arguments of text[start:end] (a Jenkins agent's `args`), placed in the whole text."""
    return [word for command in _commands(text, at, False, [(start, end)]) for word in command]


class Lines:
    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def _run(command: list[Arg]) -> tuple[Arg, str, Arg, list[Arg]] | None:
    """(the engine's word, the engine, its `run` word, the arguments after it) when the command runs a container."""
    i = 0
    while i < len(command):
        word = command[i]
        text = word.text.lstrip("@-+") if i == 0 else word.text
        assignment = _NAME.match(text)
        if assignment and text[assignment.end() : assignment.end() + 1] == "=":
            i += 1  # A=1 docker run ...
        elif word.unknown:
            return None
        elif text in _PREFIXES:
            i += 1
        elif text == "sudo":
            i += 1
            while i < len(command) and command[i].text.startswith("-"):
                i += 2 if command[i].text in _SUDO_VALUED else 1
        elif text == "env":
            i += 1
            while i < len(command) and (command[i].text.startswith("-") or "=" in command[i].text):
                i += 1
        elif text == "nice":
            i += 3 if i + 1 < len(command) and command[i + 1].text == "-n" else 1
        elif os.path.basename(text) in ENGINES:
            return _subcommand(command, i, os.path.basename(text))
        else:
            return None
    return None


def _subcommand(command: list[Arg], i: int, engine: str) -> tuple[Arg, str, Arg, list[Arg]] | None:
    engine_at = command[i]
    i += 1
    while i < len(command) and command[i].text.startswith("-"):
        name, eq, _ = command[i].text.partition("=")
        i += 2 if name in _GLOBAL_VALUED and not eq else 1
    if i < len(command) and command[i].text == "container":
        i += 1
    if i < len(command) and command[i].text in ("run", "create"):
        return engine_at, engine, command[i], command[i + 1 :]
    return None


def _commands(text: str, source: str, make: bool, within: list[tuple[int, int]] | None = None) -> list[list[Arg]]:
    """The simple commands of the text (or of its regions `within`: a Jenkinsfile's sh steps) and of every $(...)
    and backquote in them, each a list of its words, placed in the text."""
    out: list[list[Arg]] = []
    regions = [(start, end, 0) for start, end in within or [(0, len(text))]]
    while regions:
        start, end, depth = regions.pop()
        if depth > MAX_NESTING:
            raise UsageError(f"{source}: $(...) nested deeper than {MAX_NESTING} levels")
        out.extend(_Scanner(text, start, end, depth, regions, make).commands)
        if len(out) > MAX_COMMANDS:
            raise UsageError(f"{source}: more than {MAX_COMMANDS:,} commands")
    out.sort(key=lambda c: c[0].start)
    return out


class _Scanner:
    """One region of the text split into commands of words; the regions inside it to be read go to `regions`."""

    def __init__(self, text: str, start: int, end: int, depth: int, regions: list[tuple[int, int, int]], make: bool):
        self.text, self.end, self.depth, self.regions, self.make = text, end, depth, regions, make
        self.commands: list[list[Arg]] = []
        self.command: list[Arg] = []
        self.chars: list[str] = []
        self.word_start = -1
        self.unknown = False
        self.redirect = False
        self.scan(start)

    def add(self, at: int, chars: str, unknown: bool = False) -> None:
        if self.word_start < 0:
            self.word_start = at
        self.chars.append(chars)
        self.unknown = self.unknown or unknown

    def end_word(self, at: int) -> None:
        if self.word_start >= 0:
            word = Arg("".join(self.chars), self.word_start, at, self.unknown)
            if not self.redirect:
                self.command.append(word)
            self.redirect = False
        self.chars, self.word_start, self.unknown = [], -1, False

    def end_command(self, at: int) -> None:
        self.end_word(at)
        self.redirect = False
        if self.command:
            self.commands.append(self.command)
        self.command = []

    def scan(self, i: int) -> None:
        text, end = self.text, self.end
        while i < end:
            c = text[i]
            if c == "\\":
                if text.startswith("\n", i + 1) or text.startswith("\r\n", i + 1):
                    i += 2 + (text[i + 1] == "\r")  # a continuation: the backslash and the newline go
                    continue
                self.add(i, text[i + 1 : i + 2])
                i += 2
            elif c in " \t\r":
                self.end_word(i)
                i += 1
            elif c in "\n;&|()":
                self.end_command(i)
                i += 1
            elif c in "<>":
                if self.chars and "".join(self.chars).isdigit():  # 2>/dev/null: the descriptor's number goes
                    self.chars, self.word_start = [], -1
                self.end_word(i)
                i += 1
                while i < end and text[i] in "<>&":
                    i += 1
                self.redirect = True
            elif c == "#" and self.word_start < 0:
                newline = text.find("\n", i, end)
                i = end if newline < 0 else newline
            elif c == "'":
                close = text.find("'", i + 1, end)
                close = end if close < 0 else close
                quoted = text[i + 1 : close]
                self.add(i, quoted, unknown=self.make and re.search(r"\$[({]", quoted.replace("$$", "")) is not None)
                i = close + 1
            elif c == '"':
                i = self.double_quoted(i + 1)
            elif c == "`":
                close = _backquote_end(text, i + 1, end)
                self.regions.append((i + 1, close, self.depth + 1))
                self.add(i, text[i : close + 1], unknown=True)
                i = close + 1
            elif c == "$":
                i = self.dollar(i)
            else:
                self.add(i, c)
                i += 1
        self.end_command(end)

    def double_quoted(self, i: int) -> int:
        text, end = self.text, self.end
        if self.word_start < 0:
            self.word_start = i - 1
        while i < end and text[i] != '"':
            c = text[i]
            if c == "\\" and i + 1 < end:
                nxt = text[i + 1]
                self.add(i, nxt if nxt in '"\\$`\n' else c + nxt)
                i += 2
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                close = _backquote_end(text, i + 1, end)
                self.regions.append((i + 1, close, self.depth + 1))
                self.add(i, text[i : close + 1], unknown=True)
                i = close + 1
            else:
                self.add(i, c)
                i += 1
        return i + 1

    def dollar(self, i: int) -> int:
        """$NAME, ${...}, $(...), $((...)): unknown; a command substitution's text is read as commands too."""
        text, end = self.text, self.end
        nxt = text[i + 1 : i + 2]
        if self.make and nxt == "$":  # make's escape of the shell's $
            i += 1
            nxt = text[i + 1 : i + 2]
        if text.startswith("$((", i):
            close = _matching(text, i + 1, end)
            self.add(i, text[i : close + 1], unknown=True)
            return close + 1
        if nxt == "(":
            close = _matching(text, i + 1, end)
            self.regions.append((i + 2, close, self.depth + 1))
            self.add(i, text[i : close + 1], unknown=True)
            return close + 1
        if nxt == "{":
            close = text.find("}", i, end)
            close = end if close < 0 else close
            self.add(i, text[i : close + 1], unknown=True)
            return close + 1
        name = _NAME.match(text, i + 1, end)
        if name:
            self.add(i, text[i : name.end()], unknown=True)
            return name.end()
        if nxt and nxt in "@*#?$!-0123456789":
            self.add(i, text[i : i + 2], unknown=True)
            return i + 2
        self.add(i, "$")
        return i + 1


def _matching(text: str, i: int, end: int) -> int:
    """The index of the `)` that closes the `(` at i (quotes skipped), or the region's end where none does."""
    depth = 0
    while i < end:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            close = text.find("'", i + 1, end)
            i = end if close < 0 else close + 1
            continue
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return i
        i += 1
    return end


def _backquote_end(text: str, i: int, end: int) -> int:
    """The index of the backquote that closes the one before i, or the region's end where none does."""
    while i < end and text[i] != "`":
        i += 2 if text[i] == "\\" else 1
    return min(i, end)
