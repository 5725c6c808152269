"""Compose files merged as compose-go merges them (Docker Compose v2; the compose specification's merge rules).

Read in compose-go (compose-spec/compose-go e70e961c): `override/merge.go` (MergeYaml: mappings merged key by key,
sequences appended, scalars replaced; `command`, `entrypoint` and `healthcheck.test` replaced whole; `environment`,
`labels`, `tmpfs`, `sysctls`, `dns*`, `env_file`... turned into `KEY=VALUE` sequences and appended; `build` as a
string is its context), `override/uncity.go` (EnforceUnicity: after each merge, one entry per key of `volumes` and
`devices` (their target), `environment`, `labels`, `tmpfs` (the text before `=`), `ports`, `secrets`... the later
in the earlier's place), `loader/reset.go` (`!reset` takes a key away from what the files before set; `!override`
sets it in place of merging), `loader/extends.go` (a service's `extends` merged over a copy of the base service, the
extending service's own `!reset` applied to that copy first).

Every mapping keeps where it came from: a merged service is a Node with `origins` (each key: the file and line that
set it) and `parts` (every file and line that defines part of it, base first), for findings and --fix.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from .documents import Node, Tagged

Path = tuple[str, ...]
MAX_EXTENDS = 32  # services in one chain of extends
Origin = tuple[str, int | None, str]  # (file, line, the name of the service it is in there: "" for no service)

# Sequences (after their merge) with one entry per key: compose-go's `unique` table, for the keys lint reads or that
# a merge of real files meets.
_KEY_VALUE = {"environment", "labels", "annotations", "tmpfs", "sysctls", "dns", "dns_opt", "dns_search", "cap_add",
              "cap_drop", "profiles", "links", "expose"}  # fmt: skip
_BY_TARGET = {"volumes", "devices", "secrets", "configs"}
_REPLACED = {"command", "entrypoint"}  # mergeSpecials' `override`
_TO_SEQUENCE = {"environment", "labels", "annotations", "tmpfs", "sysctls", "dns", "dns_opt", "dns_search",
                "env_file", "label_file"}  # fmt: skip
_TO_MAPPING = {"networks", "depends_on", "models"}


def origins(node: Any) -> dict[Any, Origin]:
    """Each key of a mapping: the file and line that set it."""
    if isinstance(node, Node) and "origins" in node.__dict__:
        return node.__dict__["origins"]
    if isinstance(node, Node):
        return {key: (node.source or "", node.key_lines.get(key, node.line), "") for key in node}
    return {}


def parts(node: Any) -> list[tuple[str, int | None, str]]:
    """(file, line, the name it has there) of each mapping a merged service is made of, the first (its base) first."""
    if isinstance(node, Node) and "parts" in node.__dict__:
        return node.__dict__["parts"]
    return [(node.source or "", node.line, "")] if isinstance(node, Node) else []


def named(node: Any, name: str, line: int | None = None) -> Any:
    """A service's mapping with the name it has in its file and the line of that name, kept in its parts (extends
    names another service)."""
    if isinstance(node, Node) and not node.__dict__.get("parts"):
        out = _copy(node)
        out.__dict__["parts"] = [(node.source or "", line or node.line, name)]
        out.__dict__["origins"] = {k: (f, line, name) for k, (f, line, _) in origins(node).items()}
        return out
    return node


def copy(node: Any) -> Any:
    """A shallow copy of a mapping, with where it came from."""
    return _copy(node) if isinstance(node, Node) else dict(node)


def _copy(node: Node, items: Any = None) -> Node:
    out = Node(node if items is None else items)
    out.line, out.source, out.key_lines = node.line, node.source, node.key_lines
    out.__dict__.update({k: v for k, v in node.__dict__.items() if k in ("origins", "parts")})
    return out


def untag(body: Any, path: Path = ()) -> tuple[Any, list[Path]]:
    """(the body with compose's tags resolved, the paths that `!reset` or `!override` set): a `!reset` key is taken
    away, an `!override` value kept as plain. The paths are then taken away from what the files before set (reset)."""
    paths: list[Path] = []

    def walk(value: Any, at: Path) -> Any:
        if isinstance(value, Tagged):
            paths.append(at)
            return _RESET if value.tag == "!reset" else walk(value.value, at)
        if isinstance(value, Node):
            kept = {k: walk(v, (*at, str(k))) for k, v in value.items()}
            out = _copy(value, {k: v for k, v in kept.items() if v is not _RESET})
            return out
        if isinstance(value, dict):
            return {k: v for k, v in ((k, walk(v, (*at, str(k)))) for k, v in value.items()) if v is not _RESET}
        if isinstance(value, list):
            return [v for v in (walk(v, (*at, str(i))) for i, v in enumerate(value)) if v is not _RESET]
        return value

    return walk(body, path), paths


_RESET = object()


def reset(body: Any, paths: list[Path]) -> Any:
    """What the files before set, without the paths a later file resets or overrides (ResetProcessor.Apply)."""
    if not paths or not isinstance(body, dict):
        return body
    out = _copy(body) if isinstance(body, Node) else dict(body)
    for path in paths:
        _drop(out, path)
    return out


def _drop(body: dict, path: Path) -> None:
    holder: Any = body
    for key in path[:-1]:
        value = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(value, dict):
            return
        copied = _copy(value) if isinstance(value, Node) else dict(value)  # never the cached file's own mapping
        holder[key] = copied
        holder = copied
    if isinstance(holder, dict):
        holder.pop(path[-1], None)
        if isinstance(holder, Node) and "origins" in holder.__dict__:
            holder.__dict__["origins"] = {k: v for k, v in holder.__dict__["origins"].items() if k != path[-1]}


def merge(base: Any, over: Any, path: Path = ()) -> Any:
    """`over` merged over `base` (MergeYaml), neither changed."""
    special = _special(base, over, path)
    if special is not None:
        return special
    if over is None:
        return base
    if isinstance(base, dict):
        if not isinstance(over, dict):
            raise UsageError(f"cannot override {'.'.join(path)}: a mapping with a {type(over).__name__}")
        return _mappings(base, over, path)
    if isinstance(base, list):
        if not isinstance(over, list):
            raise UsageError(f"cannot override {'.'.join(path)}: a list with a {type(over).__name__}")
        return [*base, *over]
    return over


def _mappings(base: dict, over: dict, path: Path) -> dict:
    out = _copy(base) if isinstance(base, Node) else dict(base)
    if not isinstance(out, Node) and isinstance(over, Node):
        out = _copy(over, out)
    mine = dict(origins(base))
    for key, value in over.items():
        out[key] = merge(base[key], value, (*path, str(key))) if key in base else value
    mine.update(origins(over))
    if isinstance(out, Node):
        out.__dict__["origins"] = mine
        if len(path) == 2 and path[0] == "services":
            out.__dict__["parts"] = [*parts(base), *(p for p in parts(over) if p not in parts(base))]
    return _unique(out, path)


def _special(base: Any, over: Any, path: Path) -> Any:
    """compose-go's mergeSpecials for a service's keys; None where the general rule applies."""
    if len(path) != 3 or path[0] != "services":
        return None
    key = path[2]
    if key in _REPLACED:
        return over
    if key in _TO_SEQUENCE:
        return [*_sequence(base), *_sequence(over)]
    if key in _TO_MAPPING:
        return merge(_mapping(base), _mapping(over), (*path, ""))
    if key == "build":
        return merge(_build(base), _build(over), (*path, ""))
    return None


def _sequence(value: Any) -> list:
    """convertIntoSequence: a mapping as sorted `KEY=VALUE` (a null value: `KEY`), a string as one entry."""
    if isinstance(value, dict):
        return sorted(str(k) if v is None else f"{k}={_go(v)}" for k, v in value.items())
    if isinstance(value, list):
        return value
    return [value] if isinstance(value, str) else []


def _go(value: Any) -> str:
    """A value as Go's %v writes it (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _mapping(value: Any) -> dict:
    if isinstance(value, list):
        return {str(v): None for v in value}
    return value if isinstance(value, dict) else {}


def _build(value: Any) -> dict:
    return {"context": value} if isinstance(value, str) else value if isinstance(value, dict) else {}


def _unique(service: dict, path: Path) -> dict:
    """EnforceUnicity on a service's sequences: one entry per key, the later in the earlier's place."""
    if len(path) != 2 or path[0] != "services":
        return service
    for key in _KEY_VALUE | _BY_TARGET:
        entries = service.get(key)
        if isinstance(entries, list):
            seen: dict[str, int] = {}
            kept: list = []
            for entry in entries:
                index = _target(entry) if key in _BY_TARGET else str(entry).partition("=")[0]
                if index in seen:
                    kept[seen[index]] = entry
                else:
                    seen[index] = len(kept)
                    kept.append(entry)
            service[key] = kept
    return service


def _target(entry: Any) -> str:
    """volumeIndexer / deviceMappingIndexer: a mount's target (`SOURCE:TARGET[:MODE]`, or the path alone)."""
    if isinstance(entry, dict):
        return str(entry.get("target", entry.get("source", "")))
    parts = str(entry).split(":")
    return parts[1] if len(parts) > 1 else parts[0]


def extended(services: dict, name: str, load: Any, source: str, resets: list[Path], seen: tuple[str, ...] = ()) -> Any:
    """A service with its `extends` resolved (applyServiceExtends): the base service (in `services`, or in the
    file `load(path, from_file)` gives as (its name, its services)), itself extended first, then this service merged
    over a copy of it, without what this file resets under this service. The base's parts keep the name it has in
    its file."""
    service = services.get(name)
    if not isinstance(service, dict) or "extends" not in service:
        return service
    spec = service["extends"]
    ref, file = (spec.get("service"), spec.get("file")) if isinstance(spec, dict) else (spec, None)
    if not isinstance(ref, str) or not ref:
        raise UsageError(f"{source}: service {name!r}: extends needs a service name")
    at = f"{source}:{name}"
    if at in seen:
        raise UsageError(f"{source}: service {name!r}: extends makes a cycle ({' -> '.join((*seen, at))})")
    if len(seen) >= MAX_EXTENDS:
        raise UsageError(f"{source}: service {name!r}: more than {MAX_EXTENDS} services in a chain of extends")
    base_source, base_services = load(str(file), source) if file is not None else (source, services)
    if not isinstance(base_services.get(ref), dict):
        raise UsageError(f"{source}: service {name!r} extends {ref!r}, which {base_source} does not define")
    base = named(extended(base_services, ref, load, base_source, [], (*seen, at)), ref)
    base = reset({"services": {name: base}}, resets)["services"][name]
    own = (
        _copy(service, {k: v for k, v in service.items() if k != "extends"})
        if isinstance(service, Node)
        else {k: v for k, v in service.items() if k != "extends"}
    )
    return merge(base, own, ("services", str(name)))
