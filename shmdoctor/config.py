"""The config file: a repository states its jobs once. `[tool.shmdoctor]` in pyproject.toml, or `.shmdoctor.toml`
(its keys at the top), the closest one above each linted file as ruff finds its own (the working directory's for
check, audit and the exporter), or the one --config names. Its keys are the options' long names:

    [tool.shmdoctor]
    batch-size = 64            # the loader and consumer options (--batch-size, --gpus, ...)
    fail-on = "warning"
    ignore = ["probe-incomplete"]
    [tool.shmdoctor.per-path]  # a glob (relative to the config's folder; without '/', a file's name) -> options
    "k8s/train-*.yaml" = { batch-size = 256, sample-bytes = "600k" }

A value is taken from, highest first: a workload's own label or annotation (fleet.judge_labelled), the command line
(--workload's selection included), the per-path globs that match (a later one over an earlier), the config's own
keys. --select on the command line resets the selection (the config's ignore and select no longer apply), --ignore
adds to the config's (as ruff's do)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from .errors import UsageError
from .limits import shown
from .loader import LOADER_LABEL
from .model import Severity, Value
from .suppress import Selection, rule_ids
from .workload import Workload

NAMES = (".shmdoctor.toml", "pyproject.toml")  # in one folder, the first found wins (ruff: .ruff.toml first)
MAX_CONFIG_BYTES = 2**20  # a pyproject.toml is a few KiB
MAX_GLOBS = 256
COMMAND_LINE, DEFAULT = "the command line", "default"
_SIZE = "a size (an integer of bytes, or a string: '512k', '1MiB')"


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _choice(*choices: str) -> tuple[str, Callable[[object], bool]]:
    return " or ".join(repr(c) for c in choices), lambda v: v in choices


# key -> (what it takes, said in an error; whether a TOML value is that)
LOADER: dict[str, tuple[str, Callable[[object], bool]]] = {
    "batch-size": ("an integer", _int),
    "num-workers": ("an integer", _int),
    "prefetch-factor": ("an integer", _int),
    "sample-bytes": (_SIZE, lambda v: _int(v) or isinstance(v, str)),
    "dataset": ("a string, MODULE:ATTR", lambda v: isinstance(v, str)),
    "pin-memory": ("true or false", lambda v: isinstance(v, bool)),
    "ranks": ("an integer", _int),
    "gpus": ("an integer", _int),
    "nccl": _choice("auto", "shm", "p2p", "off"),
    "all-to-all": ("true or false", lambda v: isinstance(v, bool)),
    "nodes": ("an integer", _int),
    "serve": _choice("vllm", "sglang"),
    "tensor-parallel-size": ("an integer", _int),
    "ray-object-store": ("'auto' or " + _SIZE, lambda v: _int(v) or isinstance(v, str)),
    "triton-instances": ("an integer", _int),
}
_RULES = ("a list of rule IDs", lambda v: isinstance(v, list) and all(isinstance(r, str) for r in v))
KEYS = {**LOADER, "fail-on": _choice("error", "warning"), "ignore": _RULES, "select": _RULES}
PER_PATH = "per-path"
# What a command has when neither the command line nor a config says it (None: not given)
DEFAULTS: dict[str, Any] = {"pin_memory": False, "ranks": 1, "fail_on": "error", "ignore": frozenset()}


def _param(key: str) -> str:
    return key.replace("-", "_")


@dataclass(frozen=True, eq=False, repr=False)
class Config(Value):
    """One config file, read and checked: its own keys and its per-path globs, as parameter names to values."""

    path: Path
    table: str  # where its keys are: "[tool.shmdoctor]" of a pyproject.toml, "" for .shmdoctor.toml
    values: dict[str, Any]
    per_path: tuple[tuple[str, dict[str, Any]], ...]

    @property
    def name(self) -> str:
        return f"{self.path} {self.table}".strip()

    def globs(self, file: str) -> list[tuple[str, dict[str, Any]]]:
        """The per-path globs that match a file: its path from the config's folder, or its name for a glob
        without '/'."""
        try:
            relative = Path(os.path.abspath(file)).relative_to(self.path.parent).as_posix()
        except ValueError:  # outside the config's folder (--config): its name alone
            relative = ""
        name = os.path.basename(file)
        return [
            (glob, values)
            for glob, values in self.per_path
            if relative and fnmatchcase(relative, glob) or "/" not in glob and fnmatchcase(name, glob)
        ]


def read(path: Path, *, named: bool = False) -> Config | None:
    """The config a file holds; None for a pyproject.toml without [tool.shmdoctor] (unless `named` by --config: then
    that is bad input). UsageError, one line naming the file: unreadable, too big, not TOML, a key it does not take,
    a value of the wrong type."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise UsageError(f"{path}: cannot read the config: {e.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UsageError(f"{path}: a config of more than {MAX_CONFIG_BYTES // 2**20} MiB: not read")
    pyproject = path.name == "pyproject.toml"
    if pyproject and not named and b"shmdoctor" not in data:
        return None  # another tool's pyproject.toml, not parsed (check runs in a project's folder)
    if sys.version_info >= (3, 11):  # imported here: check in a folder without a config never pays for it
        import tomllib
    else:  # pragma: no cover - the same parser, before it joined the standard library
        import tomli as tomllib
    try:
        document = tomllib.loads(data.decode())
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text, as TOML must be") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not TOML: {str(e)[:200]}") from None
    except RecursionError:
        raise UsageError(f"{path}: not TOML this parser reads: nested too deep") from None
    table = document.get("tool", {}).get("shmdoctor") if pyproject else document
    if pyproject and table is None:
        if named:
            raise UsageError(f"{path}: no [tool.shmdoctor] table in it")
        return None
    where = f"{path}: [tool.shmdoctor]" if pyproject else f"{path}:"
    if not isinstance(table, dict):
        raise UsageError(f"{where} is not a table")
    values = _values(table, where, per_path=True)
    globs = table.get(PER_PATH, {})
    if not isinstance(globs, dict) or len(globs) > MAX_GLOBS:
        raise UsageError(f"{where} {PER_PATH}: a table of at most {MAX_GLOBS} globs, each a table of options")
    per_path = []
    for glob, options in globs.items():
        at = f"{where} {PER_PATH} {shown(glob)}"
        if not isinstance(options, dict):
            raise UsageError(f"{at}: a table of options, as {{ batch-size = 64 }}")
        per_path.append((glob, _values(options, at, per_path=False)))
    return Config(path, "[tool.shmdoctor]" if pyproject else "", values, tuple(per_path))


def _values(table: dict[str, Any], where: str, *, per_path: bool) -> dict[str, Any]:
    """A table's options by parameter name, each checked against what it takes; a per-path glob takes the loader
    and consumer options only."""
    keys = KEYS if per_path else LOADER
    out = {}
    for key, value in table.items():
        if per_path and key == PER_PATH:
            continue
        if key not in keys:
            taken = ", ".join([*keys, PER_PATH] if per_path else keys)
            raise UsageError(f"{where} {shown(key)}: not a key it takes ({taken})")
        what, takes = keys[key]
        if not takes(value):
            raise UsageError(f"{where} {key}: expected {what}, got {shown(value)}")
        if key in ("ignore", "select"):
            value = rule_ids(",".join(value), f"{where} {key}") if value else frozenset()
        elif key in ("sample-bytes", "ray-object-store"):
            value = str(value)  # as the command line gives it
        out[_param(key)] = value
    return out


def find(folder: Path, cache: dict[Path, Config | None]) -> Config | None:
    """The closest config at or above a folder."""
    chain = []
    for here in (folder, *folder.parents):
        if here in cache:
            found = cache[here]
            break
        chain.append(here)
        found = next(filter(None, (read(here / n) for n in NAMES if (here / n).is_file())), None)
        if found:
            break
    else:
        found = None
    for here in chain:
        cache[here] = found
    return found


@dataclass(frozen=True, eq=False, repr=False)
class Judging(Value):
    """How one file's (or the command's) targets are judged: the workload its options make, the threshold, the rules.
    The default is what no option and no config gives."""

    workload: Workload = Workload()
    fail_on: Severity = "error"
    rules: Selection = Selection()


@dataclass(frozen=True, eq=False, repr=False)
class Settings(Value):
    """The options in effect for one file (or for the command), and where each came from."""

    config: Config | None
    values: dict[str, Any]
    sources: dict[str, str]


class Resolver:
    """The settings of each file a command reads: its config's (the closest above it, or --config's) under the
    command line's. Each config file is read once, each distinct workload made (and a --dataset measured) once."""

    def __init__(self, ctx: click.Context, config: str | None, keys: Iterable[str]) -> None:
        self.keys = [k for k in KEYS if _param(k) in keys]  # the options this command takes
        self.given = {
            _param(k): ctx.params[_param(k)]
            for k in self.keys
            if ctx.get_parameter_source(_param(k)) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
        }
        self.named = read(Path(config), named=True) if config else None
        self._found: dict[Path, Config | None] = {}
        self._made: dict[tuple, Judging] = {}

    def config(self, file: str | None) -> Config | None:
        """--config's, else the closest above the file (None: the working directory)."""
        if self.named or file is None:
            return self.named or find(Path.cwd(), self._found)
        return find(Path(os.path.abspath(file)).parent, self._found)

    def settings(self, file: str | None = None) -> Settings:
        config = self.config(file)
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        layers: list[tuple[dict[str, Any], str]] = []
        if config:
            layers.append((config.values, config.name))
            if file is not None:
                layers += [(v, f"per-path {shown(glob)} of {config.name}") for glob, v in config.globs(file)]
        layers.append((self.given, COMMAND_LINE))
        for layer, source in layers:
            for name, value in layer.items():
                if name == "ignore" and name in values:  # --ignore adds to the config's
                    value, source = values[name] | value, f"{sources[name]} and {source}"
                values[name], sources[name] = value, source
        if "select" in self.given:  # --select resets the config's rules
            values.pop("ignore", None), sources.pop("ignore", None)
            if "ignore" in self.given:
                values["ignore"], sources["ignore"] = self.given["ignore"], COMMAND_LINE
        return Settings(config, values, sources)

    def judging(self, file: str | None = None) -> Judging:
        """How a file's targets (None: the command's) are judged; UsageError for a bad value, naming where it is."""
        s = self.settings(file)
        key = tuple(sorted(s.values.items())), s.config.path if s.config else None
        if key not in self._made:
            self._made[key] = self._make(s)
        return self._made[key]

    def _make(self, s: Settings) -> Judging:
        from .options import workload

        loader = {_param(k): s.values.get(_param(k), DEFAULTS.get(_param(k))) for k in LOADER if k in self.keys}
        try:
            made = workload(**loader)
            made.validate()
        except UsageError as e:
            configured = sorted({s.sources[n] for n in loader if n in s.sources} - {COMMAND_LINE})
            raise UsageError(f"{'; '.join(configured)}: {e}" if configured else str(e)) from None
        select = self.given.get("select")
        own = None
        if s.config:
            own = Selection(s.config.values.get("ignore", frozenset()), s.config.values.get("select"), s.config.name)
        rules = Selection(self.given.get("ignore") or frozenset(), select, under=own if select is None else None)
        return Judging(made, s.values.get("fail_on", "error"), rules)


def config_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--config PATH and --show-config; the command gets `config` and `show_config`."""
    f = click.option(
        "--show-config",
        is_flag=True,
        help="Print each setting in effect (for each file lint reads) and where it came from: the command line, a "
        "config's per-path glob, the config, or the default; judge nothing.",
    )(f)
    return click.option(
        "--config",
        type=click.Path(dir_okay=False),
        metavar="PATH",
        help="Read the settings from this file (a pyproject.toml's [tool.shmdoctor], or a .shmdoctor.toml) instead of "
        "the closest one above each file (check, audit, exporter: above the working directory).",
    )(f)


def resolver(config: str | None) -> Resolver:
    """The current command's resolver: its options as given on its command line, and --config's file."""
    ctx = click.get_current_context()
    return Resolver(ctx, config, ctx.params)


def _toml(value: Any) -> str:
    import json  # a TOML string is written as JSON writes one

    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (set, frozenset)):
        return "[" + ", ".join(f'"{v}"' for v in sorted(value)) + "]"
    return str(value) if isinstance(value, int) else json.dumps(value)


def show(resolve: Resolver, files: Iterable[str | None]) -> str:
    """Each setting in effect and where it came from, once for the files that share them all (None: the command's
    own, from the working directory)."""
    groups: dict[tuple, list[str]] = {}
    for file in files:
        s = resolve.settings(file)
        rows = []
        for key in resolve.keys:
            name = _param(key)
            value = s.values.get(name, DEFAULTS.get(name))
            shown_value = f"{key} = {_toml(value)}" if value is not None else f"{key}: not set"
            rows.append((shown_value, s.sources.get(name, DEFAULT if value is not None else "")))
        config = f"config: {s.config.name}" if s.config else "no config file found"
        groups.setdefault((config, tuple(rows)), []).append("(the working directory)" if file is None else file)
    out = []
    for (config, rows), names in groups.items():
        width = max(len(value) for value, _ in rows)
        out.append(f"{', '.join(names)}: {config}")
        out += [f"  {value.ljust(width)}  {source}".rstrip() for value, source in rows]
    out.append(f"(a workload's own {LOADER_LABEL} label or annotation is over these for it)")
    return "\n".join(out)
