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
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..limits import MAX_INTERPOLATION_DEPTH, MAX_IPC_CHAIN
from ..loader import LOADER_LABEL
from ..model import ENGINE_DEFAULT_SHM, SHM, SHM_SIZE_UNKNOWN, Facts, Flag, Ipc, Memory, Shm, ShmSource, Swarm
from ..sizes import parse_size, parse_tmpfs_size
from .documents import Definition, Document, target, where
from .workload import amd_gpus, env_pairs, idle, ml_signs, nccl_env, serving

SWARM_ONLY_DEPLOY_KEYS = ("mode", "placement", "update_config", "rollback_config", "endpoint_mode")
_NAME = re.compile(r"[_a-zA-Z][_a-zA-Z0-9]*")
_BRACED = re.compile(r"([_a-zA-Z][_a-zA-Z0-9]*)(?:(:?[-?+])(.*))?\Z", re.S)


def is_compose(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("services"), dict) and "kind" not in body


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
            raise UsageError(f"{where(doc.source, body)}: service {name!r} is not a mapping")
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
            return parse_size(value if isinstance(value, int) else str(value), what=key)
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
        return UsageError(f"{where(self.doc.source, self.body)}: service {self.name!r}: {message}")


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
        if path.rstrip("/") == SHM:
            svc.unset |= unset
            read_only = "ro" in (o.strip() for o in options.split(","))
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
        if str(volume.get("target", "")).rstrip("/") != SHM:
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
        if target.rstrip("/") != SHM:
            return None
    else:
        return None
    if kind == "bind" and str(source).rstrip("/") == SHM:
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


class ComposeFile:
    def __init__(self, doc: Document, swarm: bool | None = None, environ: Mapping[str, str] | None = None):
        self.doc = doc
        self.swarm = meant_for_swarm(doc.body) if swarm is None else swarm
        environ = os.environ if environ is None else environ
        self.services = {name: _Service(doc, str(name), body, environ) for name, body in doc.body["services"].items()}
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
        devices = reservations.get("devices") if isinstance(reservations, dict) else None
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

    def loader_spec(self, svc: _Service) -> str | None:
        """The shmdoctor.loader label as written (not interpolated: its error messages quote it)."""
        deploy = svc.body.get("deploy")
        for labels in (svc.body.get("labels"), deploy.get("labels") if isinstance(deploy, dict) else None):
            if isinstance(labels, dict) and labels.get(LOADER_LABEL):
                return str(labels[LOADER_LABEL])
            if isinstance(labels, list):
                for label in labels:
                    key, _, value = str(label).partition("=")
                    if key.strip() == LOADER_LABEL:
                        return value.strip()
        return None

    def definition(self, svc: _Service) -> Definition:
        unreadable: list[str] = []
        shm, ipc = self.shm(svc, unreadable)
        memory, swarm = Memory(limit_bytes=self.memory_limit(svc), used_bytes=None), self.swarm_of(svc)
        if svc.unset:  # the variables of the keys that size /dev/shm and memory (not a command's model id)
            unreadable.append(
                f"the variables {', '.join(sorted(svc.unset))} (not set here: compose would substitute an empty string)"
            )
        flags = self.flags(svc)
        facts = Facts(
            target=target("service", self.doc.source, svc.name, svc.body, id=svc.get("container_name")),
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
        return Definition(facts, self.loader_spec(svc), where(self.doc.source, svc.body))


def probe(doc: Document, swarm: bool | None = None, environ: Mapping[str, str] | None = None) -> list[Definition]:
    """One Definition per service of a compose document, in the file's order; variables from `environ` (this
    process's environment by default)."""
    compose = ComposeFile(doc, swarm, environ)
    if not compose.services:
        raise UsageError(f"{where(doc.source, doc.body)}: services: is empty: nothing to judge")
    return [compose.definition(svc) for svc in compose.services.values()]
