"""A compose file -> one Facts per service, as Docker would start it (FACTS.md, 'Docker: where /dev/shm comes from').

Precedence, as the engine applies it: a mount at /dev/shm (tmpfs or a bind) wins over the IPC mode's shm;
`ipc: host` gives the host's /dev/shm, `service:NAME` / `container:NAME` the owner's, `none` none at all;
otherwise Docker's own shm mount, sized by `shm_size` (64 MiB without it).

Swarm (`docker stack deploy`) ignores `shm_size` and `ipc` (moby#26714; docker/cli lists both as unsupported):
a file is taken as meant for Swarm when --swarm says so, or (without --no-swarm) when a service's `deploy:` has a
key only Swarm acts on (`mode`, `placement`, `update_config`, `rollback_config`, `endpoint_mode`) or a network
uses the `overlay` driver. `replicas` and `resources` alone are not a sign: `docker compose` honours them too.

Values are interpolated from this environment, then the env file (`.env` beside the file, or --env-file), as
`docker compose` does, and as the compose spec says (`$VAR`, `${VAR}`, `${VAR:-default}`,
`${VAR-default}`, `${VAR:?error}`, `${VAR?error}`, `${VAR:+alt}`, `${VAR+alt}`, nested, `$$` for a `$`). An error
names the variable and quotes the file, never a variable's value: the environment holds secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import UsageError
from ..limits import MAX_INTERPOLATION_DEPTH, MAX_IPC_CHAIN
from ..loader import LOADER_LABEL
from ..model import (
    ENGINE_DEFAULT_SHM,
    SHM,
    SHM_SIZE_UNKNOWN,
    Facts,
    Flag,
    Ipc,
    Memory,
    Place,
    Shm,
    ShmSource,
    Swarm,
    Target,
)
from ..sizes import compose_size, parse_tmpfs_size
from ..suppress import IGNORE_LABEL
from . import compose_merge, compose_sets
from .documents import Definition, Document, line_of, where
from .mountpath import at_shm, tmpfs_read_only
from .workload import amd_gpus, env_pairs, idle, ml_signs, nccl_env, serving

SWARM_ONLY_DEPLOY_KEYS = ("mode", "placement", "update_config", "rollback_config", "endpoint_mode")
_NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_BRACED = re.compile(r"([_a-zA-Z][_a-zA-Z0-9]*)(?:(:?[-?+])(.*))?\Z", re.S)


def is_compose(body: Any) -> bool:
    """A compose file: services, or only `include:` (its services are the included files')."""
    if not isinstance(body, dict) or "kind" in body:
        return False
    return isinstance(body.get("services"), dict) or (isinstance(body.get("include"), list) and "services" not in body)


def meant_for_swarm(body: dict) -> bool:
    for service in body["services"].values():
        deploy = service.get("deploy") if isinstance(service, dict) else None
        if isinstance(deploy, dict) and any(k in deploy for k in SWARM_ONLY_DEPLOY_KEYS):
            return True
    networks = body.get("networks")
    return isinstance(networks, dict) and any(
        isinstance(n, dict) and n.get("driver") == "overlay" for n in networks.values()
    )


def interpolate(text: str, environ: Any, unset: set[str], depth: int = 0) -> str:
    """One string with compose's variables substituted; the names of unset variables used bare go into `unset`.
    UsageError (naming variables, quoting only the file's text) on a bad expression or a required variable, or
    past MAX_INTERPOLATION_DEPTH levels of ${...} nested in defaults (`depth`: the levels outside this one)."""
    if depth > MAX_INTERPOLATION_DEPTH:
        raise UsageError(f"invalid interpolation: more than {MAX_INTERPOLATION_DEPTH} levels of ${{...}} nested")
    out, i = [], 0
    while (start := text.find("$", i)) >= 0:
        out.append(text[i:start])
        after = text[start + 1 : start + 2]
        name = _NAME.match(text, start + 1)
        if after == "$":
            out.append("$")
            i = start + 2
        elif after == "{":
            end = _closing(text, start + 2)
            out.append(_braced(text[start + 2 : end], environ, unset, depth))
            i = end + 1
        elif name:
            out.append(_lookup(name.group(), environ, unset))
            i = name.end()
        else:  # not a variable: kept as written
            out.append("$")
            i = start + 1
    return "".join(out) + text[i:]


def _closing(text: str, start: int) -> int:
    """The index of the `}` that closes a `${` whose body starts at `start` (bodies nest)."""
    depth, i = 1, start
    while i < len(text):
        if text[i] == "$" and text[i + 1 : i + 2] in ("$", "{"):  # an escaped $, or a nested ${
            depth += text[i + 1] == "{"
            i += 2
        elif text[i] == "}" and depth == 1:
            return i
        else:
            depth -= text[i] == "}"
            i += 1
    raise UsageError(f"invalid interpolation: {text[start - 2 :]!r} has no closing '}}'")


def _lookup(name: str, environ: Any, unset: set[str]) -> str:
    value = environ.get(name)
    if value is None:
        unset.add(name)  # compose warns and substitutes an empty string
    return value or ""


def _braced(body: str, environ: Any, unset: set[str], depth: int) -> str:
    match = _BRACED.match(body)
    if not match:
        raise UsageError(
            f"invalid interpolation: {'${' + body + '}'!r} (compose takes ${{VAR}}, ${{VAR:-default}}, "
            "${VAR-default}, ${VAR:?error}, ${VAR?error}, ${VAR:+alt}, ${VAR+alt})"
        )
    name, operator, operand = match.groups()
    if operator is None:
        return _lookup(name, environ, unset)
    value = environ.get(name)
    missing = value is None or (operator.startswith(":") and value == "")
    if operator.endswith("-"):
        return interpolate(operand, environ, unset, depth + 1) if missing else value
    if operator.endswith("+"):
        return "" if missing else interpolate(operand, environ, unset, depth + 1)
    if missing:  # ${VAR:?error} / ${VAR?error}: the message as written, its own variables not substituted
        state = "unset or empty" if operator == ":?" else "unset"
        raise UsageError(f"variable {name} is {state}" + (f": {' '.join(operand.split())}" if operand else ""))
    return value


def _interpolated(value: Any, environ: Mapping[str, str], unset: set[str]) -> Any:
    """A value of the file with every string in it interpolated, mappings and lists included."""
    if isinstance(value, str):
        return interpolate(value, environ, unset) if "$" in value else value
    if isinstance(value, dict):
        return {k: _interpolated(v, environ, unset) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolated(v, environ, unset) for v in value]
    return value


def parse_env_file(text: str, source: str) -> dict[str, str]:
    """An env file as compose reads it (`.env`, `--env-file`): KEY=VALUE lines, `export ` allowed, `#` comments,
    values in single or double quotes, an unquoted value's ` #` comment dropped. A bad line is a UsageError that
    names the file and line, never the line's text (it holds secrets)."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        key = key.strip()
        if not sep or not _NAME.fullmatch(key):
            raise UsageError(f"{source}:{number}: not a KEY=VALUE line (an env file for compose's interpolation)")
        value = value.strip()
        if len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]:
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].rstrip()
        out[key] = value
    return out


class _Service:
    """One service's keys, interpolated as they are read, with the file's name and line for error messages."""

    def __init__(self, doc: Document, name: str, body: Any, environ: Mapping[str, str]):
        if not isinstance(body, dict):
            raise UsageError(f"{_where(doc, body)}: service {name!r} is not a mapping")
        self.doc, self.name, self.body, self.environ = doc, name, body, environ
        self.unset: set[str] = set()  # variables read here that the environment does not set

    def expand(self, written: Any, key: str) -> tuple[Any, set[str]]:
        """(the value interpolated, the unset variables it used), without noting them for the service."""
        unset: set[str] = set()
        try:
            return _interpolated(written, self.environ, unset), unset
        except UsageError as e:
            raise self.error(f"{key}: {e}") from None

    def value(self, written: Any, key: str) -> Any:
        value, unset = self.expand(written, key)
        self.unset |= unset
        return value

    def get(self, key: str) -> Any:
        return self.value(self.body.get(key), key)

    def size(self, key: str, value: Any, written: Any) -> int | None:
        """A size in bytes, or None for none given; an error quotes the file's text, not an interpolated value."""
        if value in (None, ""):
            return None
        try:
            return compose_size(value if isinstance(value, int) else str(value), what=key)
        except UsageError as e:
            if "$" in str(written):
                raise self.error(
                    f"{key}: cannot read {written!r} as a size once its variables are substituted"
                ) from None
            raise self.error(str(e)) from None

    def size_of(self, key: str) -> int | None:
        return self.size(key, self.get(key), self.body.get(key))

    def deploy_limits(self) -> dict:
        """deploy.resources.limits, as written."""
        deploy = self.body.get("deploy")
        resources = deploy.get("resources") if isinstance(deploy, dict) else None
        limits = resources.get("limits") if isinstance(resources, dict) else None
        return limits if isinstance(limits, dict) else {}

    def error(self, message: str) -> UsageError:
        return UsageError(f"{_where(self.doc, self.body)}: service {self.name!r}: {message}")


def _tmpfs_bytes(svc: _Service, options: str, written: str) -> int | None:
    """The size= of a `tmpfs:` entry's options, as the kernel reads it; None without one (the kernel's half of RAM)
    or for a share of RAM ('50%'): the host's memory decides."""
    for option in options.split(","):
        key, _, value = option.strip().partition("=")
        if key == "size" and not value.endswith("%"):
            size = parse_tmpfs_size(value)
            if size is None:
                shown = written if "$" in written else value
                raise svc.error(f"tmpfs size: cannot read {shown!r} (the kernel takes bytes, or k, m, g: 512m)")
            return size or None  # size=0: no limit
    return None


def _mount_at_shm(svc: _Service) -> tuple[ShmSource, int | None, str, bool] | None:
    """A mount at /dev/shm: (source 'tmpfs' | 'host' | 'unknown', its size in bytes where the file tells, detail,
    read-only)."""
    tmpfs = svc.body.get("tmpfs")
    if tmpfs is not None and not isinstance(tmpfs, (str, list)):
        raise svc.error(f"tmpfs must be a path or a list of paths, not {type(tmpfs).__name__}")
    for entry in [tmpfs] if isinstance(tmpfs, str) else tmpfs or []:
        expanded, unset = svc.expand(str(entry), "tmpfs")
        path, _, options = expanded.partition(":")
        if at_shm(path):
            svc.unset |= unset
            read_only = tmpfs_read_only(options.split(","))
            return "tmpfs", _tmpfs_bytes(svc, options, str(entry)), f"tmpfs: {entry}", read_only
    volumes = svc.body.get("volumes")
    if volumes is not None and not isinstance(volumes, list):
        raise svc.error(f"volumes must be a list, not {type(volumes).__name__}")
    for written in volumes or []:
        volume, unset = svc.expand(written, "volumes")
        mount = _volume_at_shm(svc, volume, written)
        if mount:
            svc.unset |= unset
            return mount
    return None


def _volume_at_shm(svc: _Service, volume: Any, written: Any) -> tuple[ShmSource, int | None, str, bool] | None:
    """One entry of `volumes:` (short or long syntax) if it mounts at /dev/shm: a tmpfs, the host's, or unknown."""
    if isinstance(volume, dict):
        if volume.get("type") == "bind" and str(volume.get("target", "")).rstrip("/") == "/dev" == str(
            volume.get("source", "")
        ).rstrip("/"):  # moby mounts none of its own under a bound /dev: the host's /dev/shm is seen
            return "host", None, f"volumes: a bind of the host's /dev, and its {SHM}", volume.get("read_only") is True
        if not at_shm(volume.get("target", "")):
            return None
        kind, source = volume.get("type") or "volume", volume.get("source")
        read_only = volume.get("read_only") in (True, "true")
        if kind == "tmpfs":
            options, written_options = volume.get("tmpfs"), written.get("tmpfs")
            size = options.get("size") if isinstance(options, dict) else None
            written_size = written_options.get("size") if isinstance(written_options, dict) else None
            return (
                "tmpfs",
                svc.size("tmpfs.size", size, written_size),
                f"volumes: tmpfs at {SHM}" + (f", size {written_size}" if written_size else ""),
                read_only,
            )
    elif isinstance(volume, str):
        parts = volume.split(":")
        source, target = (parts[0], parts[1]) if len(parts) > 1 else (None, parts[0])
        kind = "bind" if source and source.startswith(("/", ".", "~")) else "volume"
        read_only = len(parts) > 2 and "ro" in parts[2].split(",")
        if kind == "bind" and target.rstrip("/") == str(source).rstrip("/") == "/dev":  # moby mounts none of its own
            return "host", None, f"volumes: {volume}: the host's /dev, and its {SHM}", read_only
        if not at_shm(target):
            return None
    else:
        return None
    if kind == "bind" and at_shm(source):
        return "host", None, f"volumes: the host's {SHM} bound in", read_only
    what = f"a {kind} of {source}" if source else "an anonymous volume"
    if isinstance(written, dict):
        return "unknown", None, f"volumes: {what} at {SHM}", read_only
    return "unknown", None, f"volumes: {written} ({what})", read_only


# The capabilities moby's nvidia device driver serves (daemon/nvidia_linux.go): a request with any of them, or for
# the nvidia driver, is GPUs; [compute, utility] without gpu is one too.
NVIDIA_CAPABILITIES = frozenset(("gpu", "nvidia", "compute", "compat32", "graphics", "utility", "video", "display"))


def _gpu_request(device: dict) -> bool:
    capabilities = device.get("capabilities")
    said = {str(c) for c in capabilities} if isinstance(capabilities, list) else set()
    return bool(said & NVIDIA_CAPABILITIES) or device.get("driver") == "nvidia"


def _where(doc: Document, node: Any) -> str:
    """file:line of a node, in the file of the set it was read from."""
    return where(getattr(node, "source", None) or doc.source, node)


Environ = Mapping[str, str] | Callable[[str], Mapping[str, str]]  # one environment, or a file's


@dataclass(frozen=True)
class InSet:
    """Where a compose set's services sit: the files whose services are the set's own (its files and the included,
    as real paths), and whether a file is read by more than one set of the run (--fix then writes into the set's
    own override)."""

    files: tuple[str, ...]  # the set's own, in order: one for a file read alone
    read: tuple[str, ...]  # every file read for it (included and extended files too)
    homes: frozenset[str]
    shared: Callable[[str], bool]


class ComposeFile:
    def __init__(
        self, doc: Document, swarm: bool | None = None, environ: Environ | None = None, in_set: InSet | None = None
    ):
        self.doc, self.in_set = doc, in_set
        self.swarm = meant_for_swarm(doc.body) if swarm is None else swarm
        environ = os.environ if environ is None else environ
        self.services = {}
        for name, body in (doc.body.get("services") or {}).items():
            home = self.home(str(name), body)
            env = environ(home[0]) if callable(environ) else environ  # compose: the .env of that file's project
            self.services[name] = _Service(doc, str(name), body, env)
        self.by_container_name = {
            str(s.get("container_name")): s for s in self.services.values() if s.get("container_name")
        }

    def shm(self, svc: _Service, unreadable: list[str], seen: tuple[str, ...] = ()) -> tuple[Shm, Ipc]:
        """The /dev/shm and IPC mode this service gets, following service:/container: to the owner.
        Nothing runs from a file: use, and so what is free, is never known (used and free are None)."""
        mount = _mount_at_shm(svc)
        written_ipc = svc.body.get("ipc")
        ipc = "private" if self.swarm else str(svc.get("ipc") or "private")
        shown = str(written_ipc) if "$" in str(written_ipc) else ipc  # a message quotes the file, not a value
        mode, _, owner = ipc.partition(":")
        if mode == "host":
            ipc_fact = Ipc("host")
        elif mode in ("service", "container"):
            ipc_fact = Ipc("container", owner=owner)
        elif mode in ("private", "shareable", "none"):
            ipc_fact = Ipc(mode)  # type: ignore[arg-type]
        else:
            raise svc.error(
                f"ipc: unknown mode {shown!r} (host, private, shareable, none, service:NAME, container:NAME)"
            )

        if mount:
            source, size, detail, read_only = mount
            if size is None and source == "tmpfs":
                unreadable.append(
                    f"{SHM_SIZE_UNKNOWN} ({detail}: no size in bytes, so the kernel's default, half the host's memory)"
                )
            elif source == "host":
                unreadable.append(
                    f"{SHM_SIZE_UNKNOWN} (the host's {SHM} is bound in: its size is the host's, "
                    "which a file does not tell)"
                )
            elif source == "unknown":
                unreadable.append(
                    f"{SHM_SIZE_UNKNOWN} ({detail}: its size is the volume's, which a file does not tell)"
                )
            return Shm.unmeasured(size, source, detail, read_only), ipc_fact
        if mode == "host":
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (ipc: host uses the host's {SHM}, whose size a file does not tell)")
            return Shm.unmeasured(None, "host-ipc", "ipc: host (the host's /dev/shm; shm_size is ignored)"), ipc_fact
        if mode == "none":
            return Shm(False, None, None, None, "none", "ipc: none"), ipc_fact
        if mode in ("service", "container"):
            donor = self.services.get(owner) if mode == "service" else self.by_container_name.get(owner)
            if donor is None and mode == "service":
                raise svc.error(f"ipc: {shown}: no service of that name in this file")
            if donor is None:
                unreadable.append(
                    f"{SHM_SIZE_UNKNOWN} (ipc: {shown}: that container is not defined in this file; "
                    "the service gets its /dev/shm)"
                )
                return Shm.unmeasured(None, "unknown", f"ipc: {shown}"), ipc_fact
            if donor.name in seen:
                raise svc.error(f"ipc: {shown}: a cycle of services sharing IPC ({' -> '.join(seen + (donor.name,))})")
            if len(seen) >= MAX_IPC_CHAIN:
                raise svc.error(f"ipc: {shown}: more than {MAX_IPC_CHAIN} services in a chain of ipc: service:NAME")
            shm, _ = self.shm(donor, unreadable, seen + (donor.name,))
            return replace(shm, detail=f"ipc: {shown}, whose /dev/shm is: {shm.detail}"), ipc_fact
        size = ENGINE_DEFAULT_SHM if self.swarm else svc.size_of("shm_size") or ENGINE_DEFAULT_SHM
        detail = (
            "no shm_size: the engine's default"
            if size == ENGINE_DEFAULT_SHM
            else f"shm_size: {svc.body.get('shm_size')}"
        )
        if self.swarm:
            detail = "Swarm ignores shm_size: the engine's default"
        return Shm.unmeasured(size, "docker-shm", detail), ipc_fact

    def memory_limit(self, svc: _Service) -> int | None:
        key, written = "deploy.resources.limits.memory", svc.deploy_limits().get("memory")
        given = [svc.size_of("mem_limit"), svc.size(key, svc.value(written, key), written)]
        return min((g for g in given if g), default=None)

    def flags(self, svc: _Service) -> frozenset[Flag]:
        """'compose-deploy-memory': fixes go where the file sets its limit; 'loads-nothing': what its command says."""
        deploy: frozenset[Flag] = (
            frozenset(("compose-deploy-memory",)) if svc.deploy_limits().get("memory") else frozenset()
        )
        return deploy | idle(svc.get("image"), svc.get("entrypoint"), svc.get("command"))

    def gpus(self, svc: _Service) -> str | None:
        """GPUs the service reserves (deploy.resources.reservations.devices with the gpu capability, or compose's
        gpus: key): 'all', a count or device ids, as docker run's --gpus says them."""
        if svc.body.get("gpus") is not None:
            gpus = svc.get("gpus")
            return "all" if gpus == "all" else str(gpus) if isinstance(gpus, (int, str)) else None
        deploy = svc.body.get("deploy")
        resources = deploy.get("resources") if isinstance(deploy, dict) else None
        reservations = resources.get("reservations") if isinstance(resources, dict) else None
        devices = (
            svc.expand(reservations.get("devices"), "deploy.resources.reservations.devices")[0]
            if isinstance(reservations, dict)
            else None
        )  # device_ids: ['${GPU_ID:-0}'] as compose substitutes it
        for device in devices if isinstance(devices, list) else []:
            if isinstance(device, dict) and _gpu_request(device):
                ids, count = device.get("device_ids"), device.get("count")
                if isinstance(ids, list) and ids:
                    return ",".join(str(i) for i in ids)
                return "all" if count in (None, "all") else str(count)
        return None

    def swarm_of(self, svc: _Service) -> Swarm | None:
        """For a file meant for Swarm: the shm_size and ipc it asks of this service, which Swarm ignores."""
        if not self.swarm:
            return None
        ipc = svc.get("ipc")
        return Swarm(ignored_shm_size=svc.size_of("shm_size"), ignored_ipc=str(ipc) if ipc else None)

    def loader_spec(self, svc: _Service, name: str = LOADER_LABEL) -> str | None:
        """The shmdoctor.loader label (or another of shmdoctor's) as written (not interpolated: its error messages
        quote it)."""
        deploy = svc.body.get("deploy")
        for labels in (svc.body.get("labels"), deploy.get("labels") if isinstance(deploy, dict) else None):
            if isinstance(labels, dict) and labels.get(name):
                return str(labels[name])
            if isinstance(labels, list):
                for label in labels:
                    key, _, value = str(label).partition("=")
                    if key.strip() == name:
                        return value.strip()
        return None

    def home(self, name: str, body: Any) -> tuple[str, int | None]:
        """The file and line that define the service in the set: the first of its own files (not a service it
        extends from another file), else where it was read."""
        own = [(f, line) for f, line, n in compose_merge.parts(body) if n == name and self._own(f)]
        return own[0] if own else (getattr(body, "source", None) or self.doc.source, line_of(body))

    def _own(self, path: str) -> bool:
        return self.in_set is None or os.path.realpath(path) in self.in_set.homes

    def places(self, svc: _Service, shm: Shm) -> tuple[tuple[str, int | None], tuple[Place, ...], Place | None]:
        """(the file and line that set the judged value, the service's other parts, where --fix writes) of a
        service made of several mappings (a compose set, extends); its own definition alone otherwise."""
        parts, home = compose_merge.parts(svc.body), self.home(svc.name, svc.body)
        if len(parts) < 2 and (self.in_set is None or len(self.in_set.read) < 2):  # a file read alone: as ever
            return (home[0], line_of(svc.body)), (), None
        key = _judged_key(svc.body, shm)
        origin = compose_merge.origins(svc.body).get(key) if key else None
        primary = origin[:2] if origin else home
        set_by = (origin[0], origin[2]) if origin else (home[0], svc.name)  # the file, and the service there
        related = tuple(
            Place(f, line, _part_why(svc.name, n, f, self.doc.source), n) for f, line, n in parts if (f, n) != set_by
        )
        own = [(f, line, n) for f, line, n in parts if n == svc.name and self._own(f)] or parts
        shared = self.in_set.shared if self.in_set is not None else (lambda _: False)
        mine = next((p for p in own if (p[0], p[2]) == set_by), None)
        if mine is not None and not shared(mine[0]):
            at, why = mine, "the file that sets it" if origin else "the file that defines the service"
        elif mine is not None:
            at, why = own[-1], f"the set's own last file ({mine[0]} is read by other sets of this run too)"
        else:
            at, why = own[-1], f"the service itself (the value is inherited from service {set_by[1]!r} through extends)"
        return primary, related, Place(at[0], at[1], why, at[2] or svc.name)

    def definition(self, svc: _Service) -> Definition:
        unreadable: list[str] = []
        shm, ipc = self.shm(svc, unreadable)
        memory, swarm = Memory(limit_bytes=self.memory_limit(svc), used_bytes=None), self.swarm_of(svc)
        if svc.unset:  # the variables of the keys that size /dev/shm and memory (not a command's model id)
            unreadable.append(
                f"the variables {', '.join(sorted(svc.unset))} (not set here: compose would substitute an empty string)"
            )
        flags = self.flags(svc)

        (file, line), related, fix_at = self.places(svc, shm)
        facts = Facts(
            target=Target(
                "service",
                f"{self.home(svc.name, svc.body)[0]}:{svc.name}",
                svc.get("container_name"),
                file=file,
                line=line,
                related=related,
                fix_at=fix_at,
            ),
            shm=shm,
            ipc=ipc,
            memory=memory,
            runtime="compose",
            ml_signs=ml_signs(svc.get("image"), svc.get("entrypoint"), svc.get("command")),
            server=serving(svc.get("image"), svc.get("entrypoint"), svc.get("command"), env=svc.get("environment")),
            gpus=self.gpus(svc) or amd_gpus(svc.body.get("devices"), svc.get("environment"), svc.body.get("runtime")),
            nccl_env=nccl_env(env_pairs(svc.get("environment"))),
            unreadable=tuple(unreadable),
            flags=flags,
            swarm=swarm,
        )
        return Definition(
            facts,
            self.loader_spec(svc),
            _where(self.doc, svc.body),
            ignore_label=self.loader_spec(svc, IGNORE_LABEL),
        )

    def check_whole(self) -> None:
        """A service with neither image nor build is an override's: compose refuses it without its base (exit 2,
        naming the base)."""
        partial = [s.name for s in self.services.values() if not s.body.get("image") and not s.body.get("build")]
        alone = self.in_set is None or len(self.in_set.files) == 1
        if not partial and not (alone and compose_sets.is_override(self.doc.source)):
            return
        what = f"service {partial[0]!r} has neither image nor build" if partial else "named as an override"
        if not alone:
            raise UsageError(f"{_where(self.doc, self.services[partial[0]].body)}: {what}, in any file of its set")
        raise UsageError(f"{self.doc.source}: {what}: an override, read over its base: {_base_needed(self.doc.source)}")


def _judged_key(body: Any, shm: Shm) -> str | None:
    """The service key that decides its /dev/shm."""
    if shm.detail.startswith("tmpfs:"):
        return "tmpfs"
    if shm.detail.startswith("volumes:"):
        return "volumes"
    if shm.source in ("host-ipc", "none") or shm.detail.startswith("ipc:"):
        return "ipc"
    return "shm_size" if shm.source == "docker-shm" and "shm_size" in body else None


def _part_why(name: str, part_name: str, path: str, first: str) -> str:
    if part_name and part_name != name:
        return f"service {part_name!r}, which {name!r} extends"
    return f"service {name!r} in {'the set' + chr(39) + 's first file' if path == first else 'a later file of the set'}"


def _base_needed(path: str) -> str:
    """The base an override needs, as a command: the folder's default compose file where there is one."""
    directory = os.path.dirname(path)
    base = next(
        (os.path.join(directory, n) for n in compose_sets.DEFAULT_FILES if os.path.isfile(os.path.join(directory, n))),
        None,
    )
    if base is None:
        return f"shmdoctor lint --compose-file BASE --compose-file {path} (BASE: the compose file it overrides)"
    return f"shmdoctor lint --compose-file {base} --compose-file {path} (or lint the folder {directory or '.'})"


def probe(
    doc: Document, swarm: bool | None = None, environ: Environ | None = None, in_set: InSet | None = None
) -> list[Definition]:
    """One Definition per service of a compose document (a file, or a set read as one), in the file's order;
    variables from `environ` (this process's environment by default, or a file's)."""
    compose = ComposeFile(doc, swarm, environ, in_set)
    if not compose.services:
        raise UsageError(f"{where(doc.source, doc.body)}: services: is empty: nothing to judge")
    compose.check_whole()
    return [compose.definition(svc) for svc in compose.services.values()]
