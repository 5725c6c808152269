"""Compose file sets: the files `docker compose` reads together, read as one document (compose-go's loader).

Which files make a set, as Docker Compose v2 finds them (compose-spec/compose-go cli/options.go, loader/loader.go):
- in a folder run, each directory's default files: the first of compose.yaml, compose.yml, docker-compose.yml,
  docker-compose.yaml, then the first of compose.override.yml, compose.override.yaml, docker-compose.override.yml,
  docker-compose.override.yaml; or the files `COMPOSE_FILE` names in the `.env` beside them (separated by
  `COMPOSE_PATH_SEPARATOR`, `:` by default), relative to that directory;
- the files given with --compose-file, in order, as compose's own `-f`;
- a compose file given by name, or found alone: itself (as `docker compose -f FILE`).
Each file of a set is read in order (loadYamlFile): its `!reset`/`!override` resolved, its `include:` projects
loaded and its own services merged over theirs, the paths it resets taken from what the files before set, its
`extends` resolved, then merged over the files before (probe/compose_merge). A file that another set includes, or
that a service extends, is read there, not as a set of its own.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from . import compose_merge, documents
from .documents import Document, Node

DEFAULT_FILES = ("compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml")
DEFAULT_OVERRIDES = (
    "compose.override.yml",
    "compose.override.yaml",
    "docker-compose.override.yml",
    "docker-compose.override.yaml",
)
MAX_INCLUDE_DEPTH = 16
_REFERENCES = re.compile(r"^\s*(include|extends)\s*:", re.M)


@dataclass(frozen=True)
class ComposeSet:
    files: tuple[str, ...]  # as given or found, in compose's order
    why: str  # how the set was made, for the report


@dataclass
class Loaded:
    """A set read as one compose document, with where its services' parts sit."""

    document: Document  # source: the set's first file
    files: tuple[str, ...]  # the set's own, in order
    read: tuple[str, ...]  # every file read for it (the set's, the included, the extended)
    homes: frozenset[str] = field(default_factory=frozenset)  # files whose services are its own (set, included)


def is_override(path: str) -> bool:
    """Named as an override (`compose.override.yml`, `docker-compose.override.yaml`, `x.override.yml`)."""
    return ".override." in os.path.basename(path)


def _key(path: str) -> str:
    return os.path.realpath(path)


class Sets:
    """The compose sets of one lint run: planned from the files found, each file parsed once."""

    def __init__(self, explicit: tuple[str, ...] = ()):
        self.explicit = explicit
        self.parsed: dict[str, list[Document]] = {}
        self.members: dict[str, int] = {}  # a file's real path -> how many sets read it
        self.consumed: set[str] = set()  # real paths of files read as part of another file's set

    def parse(self, path: str) -> list[Document]:
        key = _key(path)
        if key not in self.parsed:
            self.parsed[key] = documents.parse(documents.text(path), path)
        return self.parsed[key]

    def plan(self, found: list[tuple[str, list[str]]]) -> list[str | ComposeSet]:
        """The units lint reads, in the order found: each a file read alone (as today), or a compose set.
        `found`: (a path given, the files it names)."""
        units: list[str | ComposeSet] = [ComposeSet(self.explicit, "--compose-file")] if self.explicit else []
        taken = {_key(f) for f in self.explicit}  # files read in a set: never again alone
        for given, names in found:
            sets = _directory_sets(names) if os.path.isdir(given) else []
            for name in names:
                key = "-" if name == "-" else _key(name)
                for compose_set in [s for s in sets if key in map(_key, s.files) and key not in taken]:
                    units.append(compose_set)
                    taken.update(_key(f) for f in compose_set.files)
                if key not in taken or name == "-":
                    units.append(name)
                    taken.add(key)
        self._references([u for u in units if isinstance(u, str)])
        planned = [u for u in units if isinstance(u, ComposeSet) or u == "-" or _key(u) not in self.consumed]
        for unit in planned:
            for name in unit.files if isinstance(unit, ComposeSet) else [unit]:
                self.members[_key(name)] = self.members.get(_key(name), 0) + 1
        return planned

    def _references(self, names: list[str]) -> None:
        """The files that the compose files found include or extend (read with them, never alone)."""
        for name in names:
            if name == "-" or not name.endswith((".yml", ".yaml")):
                continue
            try:
                if not _REFERENCES.search(documents.text(name)):
                    continue
                docs = self.parse(name)
            except UsageError:  # said when the file itself is read
                continue
            for doc in docs:
                for path in _referenced(doc.body, name):
                    if _key(path) != _key(name):
                        self.consumed.add(_key(path))

    def load(self, files: tuple[str, ...]) -> Loaded:
        """A set's files read as compose reads them: one merged document."""
        read: list[str] = []
        homes: set[str] = set()
        body = self._project(files, read, homes, ())
        return Loaded(Document(files[0], 0, body), files, tuple(read), frozenset(homes))

    def single(self, doc: Document) -> Loaded:
        """One compose document read alone (`docker compose -f FILE`), its include and extends resolved."""
        read, homes = [doc.source], {_key(doc.source)}
        body = self._document(doc.body, doc.source, {}, read, homes, (_key(doc.source),))
        return Loaded(Document(doc.source, doc.index, body), (doc.source,), tuple(read), frozenset(homes))

    def shared(self, path: str) -> bool:
        """Read by more than one set of this run (--fix then writes into the set's own override)."""
        return self.members.get(_key(path), 0) > 1

    def _project(self, files: tuple[str, ...], read: list[str], homes: set[str], including: tuple[str, ...]) -> Any:
        """loadYamlModel: each file's documents in order, each merged over what the ones before made."""
        merged: Any = {}
        for path in files:
            if _key(path) in including:
                chain = " -> ".join((*including, _key(path)))
                raise UsageError(f"{path}: include makes a cycle ({chain})")
            docs = self.parse(path)
            read.append(path) if path not in read else None
            homes.add(_key(path))
            for doc in docs:
                merged = self._document(doc.body, path, merged, read, homes, (*including, _key(path)))
        return merged

    def _document(self, body: Any, path: str, merged: Any, read: list[str], homes: set[str], chain: tuple) -> Any:
        """loadYamlFile's processRawYaml: tags, include, the paths reset, extends, then the merge."""
        if not isinstance(body, dict):
            raise UsageError(f"{path}: not a compose file (a mapping with services:)")
        cfg, resets = compose_merge.untag(body)
        cfg = self._included(cfg, path, read, homes, chain)
        merged = compose_merge.reset(merged, resets)
        cfg = self._extended(cfg, path, resets, read)
        return compose_merge.merge(merged, cfg)

    def _included(self, cfg: Any, path: str, read: list[str], homes: set[str], chain: tuple[str, ...]) -> Any:
        """ApplyInclude: each included project's services, the file's own merged over them."""
        entries = cfg.get("include")
        if entries is None:
            return cfg
        if not isinstance(entries, list):
            raise UsageError(f"{documents.where(path, cfg)}: include must be a list")
        if len(chain) > MAX_INCLUDE_DEPTH:
            raise UsageError(f"{path}: include nested deeper than {MAX_INCLUDE_DEPTH} files")
        imported: dict = {}
        for entry in entries:
            paths = _include_paths(entry, path)
            body = self._project(tuple(paths), read, homes, chain)
            services = body.get("services") if isinstance(body, dict) else None
            for name, service in (services or {}).items():
                imported[name] = compose_merge.merge(imported[name], service) if name in imported else service
        own = cfg.get("services") if isinstance(cfg.get("services"), dict) else {}
        services = dict(imported)
        for name, service in own.items():
            services[name] = (
                compose_merge.merge(imported[name], service, ("services", str(name))) if (name in imported) else service
            )
        out = compose_merge.copy(cfg)
        out["services"] = services
        return out

    def _extended(self, cfg: Any, path: str, resets: list, read: list[str]) -> Any:
        services = cfg.get("services")
        if not isinstance(services, dict):
            return cfg
        named = {n: compose_merge.named(s, str(n), _key_line(services, n)) for n, s in services.items()}

        def load(file: str, source: str) -> tuple[str, dict]:
            target = os.path.join(os.path.dirname(source), file)
            if not os.path.isfile(target):
                raise UsageError(f"{source}: extends names {file}, which is not a file")
            read.append(target) if target not in read else None
            body, _ = compose_merge.untag(self.parse(target)[0].body)
            found = body.get("services") if isinstance(body, dict) else None
            if not isinstance(found, dict):
                raise UsageError(f"{target}: extended from {source}, but has no services:")
            return target, {n: compose_merge.named(s, str(n), _key_line(found, n)) for n, s in found.items()}

        out = dict(named)
        for name in named:
            if isinstance(named[name], dict) and "extends" in named[name]:
                out[name] = compose_merge.extended(named, name, load, path, resets)
        cfg = compose_merge.copy(cfg)
        cfg["services"] = out
        return cfg


def _directory_sets(names: list[str]) -> list[ComposeSet]:
    """Each directory's set among the files found: COMPOSE_FILE from its .env, else the default base and
    override (a base alone is read as a file of its own)."""
    by_directory: dict[str, dict[str, str]] = {}
    for name in names:
        by_directory.setdefault(os.path.dirname(name), {})[os.path.basename(name)] = name
    out = []
    for directory, files in by_directory.items():
        chosen = _compose_file(directory)
        if chosen is not None:
            out.append(ComposeSet(chosen[0], f"COMPOSE_FILE in {chosen[1]}"))
            continue
        base = next((files[n] for n in DEFAULT_FILES if n in files), None)
        override = next((files[n] for n in DEFAULT_OVERRIDES if n in files), None)
        if base is not None and override is not None:
            out.append(ComposeSet((base, override), "compose's default files"))
    return out


def _key_line(mapping: Any, key: Any) -> int | None:
    return mapping.key_lines.get(key) if isinstance(mapping, Node) else None


def _compose_file(directory: str) -> tuple[tuple[str, ...], str] | None:
    """The files COMPOSE_FILE names in the directory's .env, and that .env; None without one."""
    from .compose import parse_env_file

    env = os.path.join(directory or ".", ".env")
    if not os.path.isfile(env):
        return None
    values = parse_env_file(documents.text(env), env)
    listed = values.get("COMPOSE_FILE")
    if not listed:
        return None
    separator = values.get("COMPOSE_PATH_SEPARATOR") or ":"
    paths = tuple(os.path.join(directory, p) for p in listed.split(separator) if p)
    for path in paths:
        if not os.path.isfile(path):
            raise UsageError(f"{env}: COMPOSE_FILE names {os.path.relpath(path, directory or '.')}, not a file")
    return paths, env


def _include_paths(entry: Any, source: str) -> list[str]:
    """An include entry's files (a path, or `path:` one or a list), relative to the including file's directory."""
    paths = entry.get("path") if isinstance(entry, dict) else entry
    listed = [paths] if isinstance(paths, str) else paths
    if not isinstance(listed, list) or not listed or not all(isinstance(p, str) for p in listed):
        raise UsageError(f"{source}: include: an entry must be a path or have path: (a path or a list of paths)")
    out = [os.path.join(os.path.dirname(source), p) for p in listed]
    for path in out:
        if not os.path.isfile(path):
            raise UsageError(
                f"{source}: include names {os.path.relpath(path, os.path.dirname(source) or '.')}, not a file"
            )
    return out


def _referenced(body: Any, source: str) -> list[str]:
    """The files a compose body includes or extends (for a folder run: read with it, never alone)."""
    out: list[str] = []
    entries = body.get("include") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        paths = entry.get("path") if isinstance(entry, dict) else entry
        out += [
            os.path.join(os.path.dirname(source), p)
            for p in ([paths] if isinstance(paths, str) else paths or [])
            if isinstance(p, str)
        ]
    services = body.get("services") if isinstance(body, dict) else None
    for service in services.values() if isinstance(services, dict) else []:
        extends = service.get("extends") if isinstance(service, dict) else None
        if isinstance(extends, dict) and isinstance(extends.get("file"), str):
            out.append(os.path.join(os.path.dirname(source), extends["file"]))
    return out
