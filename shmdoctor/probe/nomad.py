"""Nomad job files (`.nomad`, `.nomad.hcl`) -> one Facts per task of the docker driver, judged as the container the
driver starts: `config { shm_size }` in bytes (the driver's unit), `ipc_mode`, `image`, `command`/`args`;
`resources { memory }` in MB and its `device "nvidia/gpu" { count }`. Without shm_size the Docker daemon's default
(64 MiB) applies. Other drivers (exec, raw_exec, java) run on the client's own /dev/shm: not judged here. A file
with template placeholders (Levant's `[[ ]]`, nomad-pack's `[[ ]]`, `{{ }}`) is said to be one, to render first.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..model import Target
from ..sizes import MiB
from . import docker, documents
from .documents import Definition
from .hcl import blocks, parse
from .unknown import Unknown

SUFFIXES = (".nomad", ".nomad.hcl")
# Levant's and nomad-pack's actions ([[ .x ]], [[ template "x" . ]]): a job template wherever they are
_JOB_TEMPLATE = re.compile(r"\[\[-?\s*(?:[.$]|[a-z]+\b).{0,200}?\]\]")
# {{ }}: most often consul-template in a template block's data, which Nomad renders when the task runs (hashicorp/
# nomad's own demos): a job template only where the file is no HCL with it
_ACTION = re.compile(r"\{\{.{0,200}?\}\}")


def read(text: str, source: str) -> tuple[list[Definition], list[str]]:
    """(one Definition per docker task, why the file or a task was passed over). A job file that is not HCL is bad
    input (UsageError); one with template placeholders is passed over with how to render it."""
    found = _JOB_TEMPLATE.search(text)
    try:
        body = None if found else parse(text, source)
    except documents.Unparsable as e:
        found = _ACTION.search(text)
        if found is None:
            raise UsageError(str(e)) from None
    if found:
        line = text.count("\n", 0, found.start()) + 1
        return [], [
            f"{source}:{line}: a Nomad job template ({found.group(0)[:40]}): render it first (levant render, "
            "nomad-pack render), then lint the result"
        ]
    out: list[Definition] = []
    passed_over: list[str] = []
    for job in blocks(body, "job"):
        for group in blocks(job, "group"):
            for task in blocks(group, "task"):
                name = "/".join(str(b.labels[0]) if b.labels else "?" for b in (job, group, task))
                if task.get("driver") != "docker":
                    passed_over.append(f"{source}: {name}: driver {task.get('driver')!s}, not docker: not judged")
                    continue
                out.append(_task(source, name, task))
    return out, passed_over


def _task(source: str, name: str, task: Any) -> Definition:
    config: dict = next(iter(blocks(task, "config")), {})
    resources: dict = next(iter(blocks(task, "resources")), {})
    where = f"{source}:{getattr(task, 'line', '')}: {name}"
    unknown: list[str] = []

    def number(node: Any, key: str, unit: int) -> int | None:
        value = node.get(key)
        if isinstance(value, Unknown):
            unknown.append(f"{key} is {value}")
            return None
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**50 // unit:
            raise UsageError(f"{where}: {key} must be a whole number, not {str(value)[:40]}")
        return value * unit

    host: dict[str, Any] = {"ShmSize": number(config, "shm_size", 1), "Memory": number(resources, "memory", MiB)}
    ipc = config.get("ipc_mode")
    if isinstance(ipc, str) and not isinstance(ipc, Unknown):
        host["IpcMode"] = ipc
    gpus = sum(
        int(d.get("count", 1)) if isinstance(d.get("count", 1), int) else 1
        for d in blocks(resources, "device")
        if d.labels and "gpu" in str(d.labels[0])
    )
    if gpus:
        host["DeviceRequests"] = [{"Capabilities": [["gpu"]], "Count": gpus, "DeviceIDs": []}]
    args: list = config["args"] if isinstance(config.get("args"), list) else []
    command = [config["command"], *args] if isinstance(config.get("command"), str) else args
    env = task.get("env") if isinstance(task.get("env"), dict) else {}
    info = {
        "Name": name,
        "HostConfig": host,
        "Config": {"Image": config.get("image"), "Cmd": command, "Env": [f"{k}={v}" for k, v in env.items()]},
    }
    probed = docker.facts_from_inspect(info)
    shm, unreadable = docker.declared_shm(
        probed,
        config.get("shm_size"),
        unresolved=any(u.startswith("shm_size") for u in unknown),
        when="the job is run",
        shown=lambda size: f"config.shm_size: {size}",
        host="the Nomad client",
    )
    facts = replace(
        probed.facts,
        target=Target("workload", f"{source}:{name}", file=source, line=getattr(task, "line", None)),
        shm=shm,
        unreadable=unreadable,
        form="nomad",
    )
    return Definition(facts)
