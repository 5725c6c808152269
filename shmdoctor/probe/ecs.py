"""AWS ECS task definitions and Batch job definitions (JSON, as `aws ecs describe-task-definition` / `aws batch
describe-job-definitions` print them and `register-*` take them) -> one Facts per container.

/dev/shm of a container: a `linuxParameters.tmpfs` entry at /dev/shm (size in MiB), else the task's `ipcMode`
(host: the instance's; none: none), else `linuxParameters.sharedMemorySize` (MiB), else the engine's 64 MiB.
Fargate supports neither sharedMemorySize nor ipcMode host (AWS: "not supported for tasks using the Fargate launch
type"): a Fargate container gets the runtime's 64 MiB whatever the definition asks, and no fix may ask for more.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from ..limits import MAX_BYTES, MAX_DIGITS, shown
from ..model import ENGINE_DEFAULT_SHM, SHM, SHM_SIZE_UNKNOWN, Facts, Flag, Ipc, Memory, Shm
from ..sizes import MiB
from .documents import Definition, Document, target
from .mountpath import at_shm, tmpfs_read_only
from .unknown import Unknown
from .workload import idle, ml_signs, serving

FARGATE_IGNORES = "Fargate does not support linuxParameters.sharedMemorySize"
MAX_CONTAINERS = 1000  # containers of one file, every definition and node range together (ECS allows 10 a task)


def _list(value: Any, what: str, where: str) -> list:
    """A field that is a list in ECS's and Batch's schema (absent, or set when deployed: empty), or a one-line
    UsageError."""
    if value is None or isinstance(value, Unknown):
        return []
    if not isinstance(value, list):
        raise UsageError(f"{where}: {what} must be a list, not {type(value).__name__}")
    return value


def _object(value: Any, what: str, where: str) -> dict:
    if value is None or isinstance(value, Unknown):
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{where}: {what} must be an object, not {type(value).__name__}")
    return value


def is_task_definition(body: Any) -> bool:
    """An ECS task definition (bare, or under describe-task-definition's `taskDefinition`), or Batch job
    definitions (bare, or describe-job-definitions' `jobDefinitions` list)."""
    return bool(_definitions(body))


def _definitions(body: Any) -> list[tuple[str, dict]]:
    """(kind, definition) pairs: 'task' for ECS, 'job' for Batch."""
    if not isinstance(body, dict):
        return []
    if isinstance(body.get("taskDefinition"), dict):
        body = body["taskDefinition"]
    if isinstance(body.get("containerDefinitions"), list):
        return [("task", body)]
    jobs = body.get("jobDefinitions") if isinstance(body.get("jobDefinitions"), list) else [body]
    return [("job", j) for j in jobs if isinstance(j, dict) and ("containerProperties" in j or "nodeProperties" in j)]


def _mib(value: Any, what: str, where: str) -> int | None:
    """A size in MiB as ECS writes it (an integer, or a string of one for the task's memory) -> bytes; None where
    it is not given or set when deployed (a Terraform variable, a CloudFormation !Ref)."""
    if value in (None, "") or isinstance(value, Unknown):
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS:
        raise UsageError(f"{where}: {what} must be a whole number of MiB, not {shown(value)}")
    if int(text) * MiB > MAX_BYTES:
        raise UsageError(f"{where}: {what} of {text} MiB is more memory than any machine has")
    return int(text) * MiB


def _requirement(container: dict, kind: str, where: str) -> str | None:
    for req in _list(container.get("resourceRequirements"), "resourceRequirements", where):
        if isinstance(req, dict) and req.get("type") == kind:
            value = req.get("value")
            return value if isinstance(value, Unknown) else str(value)
    return None


class _Container:
    def __init__(self, source: str, definition: str, body: dict, fargate: bool, ipc_mode: str | None, batch: bool):
        self.source, self.definition, self.body, self.batch = source, definition, body, batch
        self.fargate, self.ipc_mode = fargate, ipc_mode
        self.where = f"{source}: {definition}"
        self.params = _object(body.get("linuxParameters"), "linuxParameters", self.where)

    def shm(self, unreadable: list[str]) -> tuple[Shm, Ipc]:
        for mount in _list(self.params.get("tmpfs"), "linuxParameters.tmpfs", self.where):
            if isinstance(mount, dict) and at_shm(mount.get("containerPath", "")):
                size = _mib(mount.get("size"), "linuxParameters.tmpfs size", self.where)
                options = [str(o) for o in _list(mount.get("mountOptions"), "tmpfs mountOptions", self.where)]
                shm = Shm.unmeasured(size, "tmpfs", f"linuxParameters.tmpfs at {SHM}", tmpfs_read_only(options))
                return shm, Ipc("private")
        if isinstance(self.ipc_mode, Unknown):
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (ipcMode is {self.ipc_mode}, set when it is deployed)")
            return Shm.unmeasured(None, "unknown", f"ipcMode: {self.ipc_mode}"), Ipc("unknown")
        if self.ipc_mode == "none":
            return Shm(False, None, None, None, "none", "ipcMode: none"), Ipc("none")
        if self.ipc_mode == "task" and not self.fargate:  # the agent joins each container to its pause container's
            owner = "the task's pause container"
            unreadable.append(
                f"{SHM_SIZE_UNKNOWN} (ipcMode: task shares {owner}'s {SHM}, which the definition does not size)"
            )
            return Shm.unmeasured(None, "unknown", f"ipcMode: task ({owner}'s /dev/shm)"), Ipc("container", owner=owner)
        if self.ipc_mode == "host" and not self.fargate:
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (ipcMode: host uses the instance's {SHM}, not in the definition)")
            return Shm.unmeasured(None, "host-ipc", "ipcMode: host (the instance's /dev/shm)"), Ipc("host")
        written = self.params.get("sharedMemorySize")
        asked = _mib(written, "linuxParameters.sharedMemorySize", self.where)
        if isinstance(written, Unknown) and not self.fargate:
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (linuxParameters.sharedMemorySize is {written}, set when deployed)")
            return Shm.unmeasured(None, "docker-shm", f"linuxParameters.sharedMemorySize: {written}"), Ipc("private")
        if self.fargate:
            detail = f"{FARGATE_IGNORES} ({asked // MiB})" if asked else "Fargate's /dev/shm, the runtime's 64 MiB"
            return Shm.unmeasured(ENGINE_DEFAULT_SHM, "runtime-shm", detail), Ipc("private")
        if asked:
            return Shm.unmeasured(asked, "docker-shm", f"linuxParameters.sharedMemorySize: {asked // MiB}"), Ipc(
                "private"
            )
        return Shm.unmeasured(ENGINE_DEFAULT_SHM, "docker-shm", "no sharedMemorySize: the engine's default"), Ipc(
            "private"
        )

    def facts(self, name: str, task_memory: int | None) -> Facts:
        unreadable: list[str] = []
        shm, ipc = self.shm(unreadable)
        memory = _mib(self.body.get("memory"), "memory", self.where) or _mib(
            _requirement(self.body, "MEMORY", self.where), "resourceRequirements MEMORY", self.where
        )
        flags: set[Flag] = {"shm-fixed"} if self.fargate else set()
        if self.fargate and self.params.get("sharedMemorySize") not in (None, ""):
            flags.add("shm-size-ignored")
        return Facts(
            target=target("workload", self.source, name, self.body),
            shm=shm,
            ipc=ipc,
            memory=Memory(limit_bytes=memory or task_memory, used_bytes=None),
            runtime="batch" if self.batch else "ecs",
            gpus=_requirement(self.body, "GPU", self.where),
            unreadable=tuple(unreadable),
            flags=frozenset(flags)
            | idle(self.body.get("image"), self.body.get("entryPoint"), self.body.get("command")),
            ml_signs=ml_signs(self.body.get("image"), self.body.get("entryPoint"), self.body.get("command")),
            server=serving(self.body.get("image"), self.body.get("entryPoint"), self.body.get("command")),
        )


def placed(body: Any, source: str = "") -> Iterator[tuple[str, str, dict, Any]]:
    """(kind, definition's name, the definition, container) for each container of each task ('task') or job ('job')
    definition, the container named family/container or job[/node range]: what lint judges and --fix edits. At most
    MAX_CONTAINERS of them (a million empty containers took 300 s and 7.6 GB), counted before any is judged."""
    count = 0
    for kind, definition in _definitions(body):
        if kind == "task":
            name = str(definition.get("family") or "task")
            containers = definition["containerDefinitions"]
        else:
            name = str(definition.get("jobDefinitionName") or "job")
            where = f"{source}: {name}"
            nodes = _object(definition.get("nodeProperties"), "nodeProperties", where)
            containers = _list(nodes.get("nodeRangeProperties"), "nodeProperties.nodeRangeProperties", where)
        count += len(containers) + (kind == "job")
        if count > MAX_CONTAINERS:
            raise UsageError(f"{source}: more than {MAX_CONTAINERS} containers in one file (ECS allows 10 a task)")
        found: list[tuple[str, Any]]
        if kind == "task":
            found = [(f"{name}/{c.get('name', '?')}", c) for c in containers if isinstance(c, dict)]
        else:
            found = [(name, definition.get("containerProperties"))]
            found += [
                (f"{name}/{r.get('targetNodes', i)}", r.get("container"))
                for i, r in enumerate(containers)
                if isinstance(r, dict)
            ]
        yield from ((kind, label, definition, container) for label, container in found)


def probe(doc: Document) -> list[Definition]:
    """One Definition per container of each task or job definition."""
    out = []
    for kind, label, definition, container in list(placed(doc.body, doc.source)):
        if not isinstance(container, dict):
            continue
        if kind == "task":
            name = str(definition.get("family") or "task")
            where = f"{doc.source}: {name}"
            compatible = _list(definition.get("requiresCompatibilities"), "requiresCompatibilities", where)
            fargate = "FARGATE" in compatible and "EC2" not in compatible
            task_memory = _mib(definition.get("memory"), "memory", f"{doc.source}: {name}")
            unit = _Container(doc.source, name, container, fargate, definition.get("ipcMode"), batch=False)
            out.append(Definition(unit.facts(label, task_memory)))
        else:
            name = str(definition.get("jobDefinitionName") or "job")
            where = f"{doc.source}: {name}"
            fargate = "FARGATE" in _list(definition.get("platformCapabilities"), "platformCapabilities", where)
            unit = _Container(doc.source, name, container, fargate, None, batch=True)
            out.append(Definition(unit.facts(label, None)))
    return out
