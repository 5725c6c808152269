"""A compose file -> one Facts per service, as Docker would start it (FACTS.md, 'Docker: where /dev/shm comes from').

Precedence, as the engine applies it: a mount at /dev/shm (tmpfs or a bind) wins over the IPC mode's shm;
`ipc: host` gives the host's /dev/shm, `service:NAME` / `container:NAME` the owner's, `none` none at all;
otherwise Docker's own shm mount, sized by `shm_size` (64 MiB without it).

Swarm (`docker stack deploy`) ignores `shm_size` and `ipc` (moby#26714; docker/cli lists both as unsupported):
a file is taken as meant for Swarm when --swarm says so, or (without --no-swarm) when a service's `deploy:` has a
key only Swarm acts on (`mode`, `placement`, `update_config`, `rollback_config`, `endpoint_mode`) or a network
uses the `overlay` driver. `replicas` and `resources` alone are not a sign: `docker compose` honours them too.
"""
from __future__ import annotations

import os
import re
from typing import Any

from ..errors import UsageError
from ..model import Facts, Ipc, Memory, Shm, Target
from ..sizes import MiB, parse_size
from .documents import LOADER_KEY, Definition, Document, where

SHM = "/dev/shm"
DOCKER_DEFAULT_SHM = 64 * MiB
SWARM_ONLY_DEPLOY_KEYS = ("mode", "placement", "update_config", "rollback_config", "endpoint_mode")
_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::?-([^}]*))?\}|(\w+))")


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


def _interpolate(value: Any) -> Any:
    """Compose's ${VAR}, ${VAR:-default}, ${VAR-default} and $VAR, from this environment."""
    if not isinstance(value, str) or "$" not in value:
        return value
    return _VARIABLE.sub(lambda m: os.environ.get(m.group(1) or m.group(3), m.group(2) or ""), value)


class _Service:
    """One service's keys, read with the file's name and line for error messages."""

    def __init__(self, doc: Document, name: str, body: Any):
        if not isinstance(body, dict):
            raise UsageError(f"{where(doc.source, body)}: service {name!r} is not a mapping")
        self.doc, self.name, self.body = doc, name, body

    def get(self, key: str) -> Any:
        return _interpolate(self.body.get(key))

    def size(self, value: Any, key: str) -> int | None:
        if value in (None, ""):
            return None
        try:
            return parse_size(value if isinstance(value, int) else str(value), what=key)
        except UsageError as e:
            raise UsageError(f"{where(self.doc.source, self.body)}: service {self.name!r}: {e}") from None

    def deploy_limits(self) -> dict:
        deploy = self.get("deploy")
        resources = deploy.get("resources") if isinstance(deploy, dict) else None
        limits = resources.get("limits") if isinstance(resources, dict) else None
        return limits if isinstance(limits, dict) else {}

    def error(self, message: str) -> UsageError:
        return UsageError(f"{where(self.doc.source, self.body)}: service {self.name!r}: {message}")


def _tmpfs_size(options: str) -> str | None:
    """'size=512m,mode=1777' -> '512m'; None without size= (the kernel's default, half the host's memory)."""
    for option in options.split(","):
        key, _, value = option.strip().partition("=")
        if key == "size":
            return value
    return None


def _mount_at_shm(svc: _Service) -> tuple[str, Any, str] | None:
    """A tmpfs or a bind at /dev/shm: (kind 'tmpfs' | 'host', size as written or None, how it was told)."""
    tmpfs = svc.get("tmpfs")
    if tmpfs is not None and not isinstance(tmpfs, (str, list)):
        raise svc.error(f"tmpfs must be a path or a list of paths, not {type(tmpfs).__name__}")
    for entry in [tmpfs] if isinstance(tmpfs, str) else tmpfs or []:
        path, _, options = _interpolate(str(entry)).partition(":")
        if path.rstrip("/") == SHM:
            return "tmpfs", _tmpfs_size(options), f"tmpfs: {entry}"
    volumes = svc.get("volumes")
    if volumes is not None and not isinstance(volumes, list):
        raise svc.error(f"volumes must be a list, not {type(volumes).__name__}")
    for volume in volumes or []:
        if isinstance(volume, dict) and str(volume.get("target", "")).rstrip("/") == SHM:
            if volume.get("type") == "tmpfs":
                options = volume.get("tmpfs")
                size = options.get("size") if isinstance(options, dict) else None
                return "tmpfs", _interpolate(size), f"volumes: tmpfs at {SHM}" + (f", size {size}" if size else "")
            if volume.get("type") == "bind" and str(volume.get("source", "")).rstrip("/") == SHM:
                return "host", None, f"volumes: the host's {SHM} bound in"
        elif isinstance(volume, str):
            parts = _interpolate(volume).split(":")
            if len(parts) >= 2 and parts[1].rstrip("/") == SHM and parts[0].rstrip("/") == SHM:
                return "host", None, f"volumes: {volume}"
    return None


class ComposeFile:
    def __init__(self, doc: Document, swarm: bool | None = None):
        self.doc = doc
        self.swarm = meant_for_swarm(doc.body) if swarm is None else swarm
        self.services = {name: _Service(doc, str(name), body) for name, body in doc.body["services"].items()}
        self.by_container_name = {
            str(s.get("container_name")): s for s in self.services.values() if s.get("container_name")
        }

    def shm(self, svc: _Service, unreadable: list[str], seen: tuple[str, ...] = ()) -> tuple[Shm, Ipc]:
        """The /dev/shm and IPC mode this service gets, following service:/container: to the owner."""
        mount = _mount_at_shm(svc)
        ipc = "private" if self.swarm else str(svc.get("ipc") or "private")
        mode, _, owner = ipc.partition(":")
        if mode == "host":
            ipc_fact = Ipc("host")
        elif mode in ("service", "container"):
            ipc_fact = Ipc("container", owner=owner)
        elif mode in ("private", "shareable", "none"):
            ipc_fact = Ipc(mode)  # type: ignore[arg-type]
        else:
            raise svc.error(f"ipc: unknown mode {ipc!r} (host, private, shareable, none, service:NAME, container:NAME)")

        if mount:
            kind, written, detail = mount
            size = svc.size(written, "tmpfs size") if written and not str(written).endswith("%") else None
            if size is None and kind == "tmpfs":
                unreadable.append(f"the size of {SHM} ({detail}: no size in bytes, so the kernel's default, "
                                  "half the host's memory)")
            return Shm(True, size, None, size, kind, detail), ipc_fact
        if mode == "host":
            return Shm(True, None, None, None, "host-ipc", "ipc: host (the host's /dev/shm; shm_size is ignored)"), ipc_fact
        if mode == "none":
            return Shm(False, None, None, None, "none", "ipc: none"), ipc_fact
        if mode in ("service", "container"):
            donor = self.services.get(owner) if mode == "service" else self.by_container_name.get(owner)
            if donor is None and mode == "service":
                raise svc.error(f"ipc: {ipc}: no service {owner!r} in this file")
            if donor is None:
                unreadable.append(f"the size of {SHM} (ipc: {ipc}: container {owner!r} is not defined in this file; "
                                  "the service gets that container's /dev/shm)")
                return Shm(True, None, None, None, "unknown", f"ipc: {ipc}"), ipc_fact
            if donor.name in seen:
                raise svc.error(f"ipc: {ipc}: a cycle of services sharing IPC ({' -> '.join(seen + (donor.name,))})")
            shm, _ = self.shm(donor, unreadable, seen + (donor.name,))
            return Shm(shm.present, shm.size_bytes, None, shm.free_bytes, shm.source,
                       f"ipc: {ipc}, whose /dev/shm is: {shm.detail}"), ipc_fact
        size = DOCKER_DEFAULT_SHM if self.swarm else svc.size(svc.get("shm_size"), "shm_size") or DOCKER_DEFAULT_SHM
        detail = "no shm_size: the engine's default" if size == DOCKER_DEFAULT_SHM else f"shm_size: {svc.get('shm_size')}"
        if self.swarm:
            detail = "Swarm ignores shm_size: the engine's default"
        return Shm(True, size, None, size, "docker-shm", detail), ipc_fact

    def memory_limit(self, svc: _Service) -> int | None:
        given = [svc.size(svc.get("mem_limit"), "mem_limit"),
                 svc.size(_interpolate(svc.deploy_limits().get("memory")), "deploy.resources.limits.memory")]
        return min((g for g in given if g), default=None)

    def flags(self, svc: _Service) -> frozenset[str]:
        """'compose-deploy-memory': fixes go where the file sets its limit; 'swarm' and what Swarm ignores."""
        flags = {"compose-deploy-memory"} if svc.deploy_limits().get("memory") else set()
        if not self.swarm:
            return frozenset(flags)
        flags.add("swarm")
        if svc.get("shm_size") not in (None, ""):
            flags.add(f"swarm-ignores-shm-size={svc.size(svc.get('shm_size'), 'shm_size')}")
        if svc.get("ipc"):
            flags.add(f"swarm-ignores-ipc={svc.get('ipc')}")
        return frozenset(flags)

    def loader_spec(self, svc: _Service) -> str | None:
        deploy = svc.get("deploy")
        for labels in (svc.get("labels"), deploy.get("labels") if isinstance(deploy, dict) else None):
            if isinstance(labels, dict) and labels.get(LOADER_KEY):
                return str(labels[LOADER_KEY])
            if isinstance(labels, list):
                for label in labels:
                    key, _, value = str(label).partition("=")
                    if key.strip() == LOADER_KEY:
                        return value.strip()
        return None

    def definition(self, svc: _Service) -> Definition:
        unreadable: list[str] = []
        shm, ipc = self.shm(svc, unreadable)
        facts = Facts(
            target=Target("service", f"{self.doc.source}:{svc.name}", id=svc.get("container_name")),
            shm=shm,
            ipc=ipc,
            memory=Memory(limit_bytes=self.memory_limit(svc), used_bytes=None),
            runtime="compose",
            unreadable=tuple(unreadable),
            flags=self.flags(svc),
        )
        return Definition(facts, self.loader_spec(svc), where(self.doc.source, svc.body))


def probe(doc: Document, swarm: bool | None = None) -> list[Definition]:
    """One Definition per service of a compose document, in the file's order."""
    compose = ComposeFile(doc, swarm)
    return [compose.definition(svc) for svc in compose.services.values()]
