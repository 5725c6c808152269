"""Terraform configurations (`.tf`, HCL) -> the targets of the resources that run containers, each judged as the
platform it creates would run it:

- `aws_ecs_task_definition`: `container_definitions` (`jsonencode([...])`, a heredoc or string of JSON, or
  `file(...)` of a JSON file beside it) read as the ECS task definition it registers (probe/ecs.py);
- `aws_batch_job_definition`: `container_properties` or `node_properties` (multinode) as the Batch job definition;
- `kubernetes_*` pods and their controllers (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod,
  ReplicationController; `_v1` names too), their blocks as the Kubernetes object the provider sends (`container`
  -> `containers`, `empty_dir { medium = "Memory" size_limit = ... }` -> `emptyDir`), and `kubernetes_manifest`'s
  `manifest` as it is (probe/kubernetes.py);
- `docker_container` (kreuzwerker/docker): `shm_size` in MiB, `ipc_mode`, `memory` in MiB, `gpus`, `mounts`,
  `tmpfs`, `volumes`, read as the container's HostConfig (probe/docker.py).

Each target is named by its resource address (`aws_ecs_task_definition.train/trainer`) or, for Kubernetes, by
the object's kind and name. What Terraform evaluates (`var.x`, `${...}`, a module's output) is unknown, never
guessed: said as such. Other resources are passed over.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..model import SHM, SHM_SIZE_UNKNOWN, Target
from ..sizes import MiB
from . import docker, documents, ecs, kubernetes
from .documents import Definition, Document, Node
from .hcl import Block, blocks, unknowns
from .mountpath import at_shm
from .unknown import Unknown

KUBERNETES_KINDS = {
    "pod": ("v1", "Pod"),
    "deployment": ("apps/v1", "Deployment"),
    "stateful_set": ("apps/v1", "StatefulSet"),
    "daemonset": ("apps/v1", "DaemonSet"),
    "daemon_set": ("apps/v1", "DaemonSet"),
    "job": ("batch/v1", "Job"),
    "cron_job": ("batch/v1", "CronJob"),
    "replication_controller": ("v1", "ReplicationController"),
}
# Blocks the kubernetes provider repeats, as the list the API has (the rest are single blocks, objects in the API).
_LISTS = {
    "container": "containers",
    "init_container": "initContainers",
    "ephemeral_container": "ephemeralContainers",
    "volume": "volumes",
    "volume_mount": "volumeMounts",
    "volume_device": "volumeDevices",
    "env": "env",
    "env_from": "envFrom",
    "port": "ports",
    "toleration": "tolerations",
    "image_pull_secrets": "imagePullSecrets",
    "host_aliases": "hostAliases",
    "topology_spread_constraint": "topologySpreadConstraints",
    "readiness_gate": "readinessGates",
    "items": "items",
    "sources": "sources",
}
_NAMES = {"host_ipc": "hostIPC", "host_pid": "hostPID"}
_FILE = re.compile(r'^(?:file|templatefile)\(\s*"(?:\$\{path\.(?:module|root)\}/)?([^"$]{1,4096})"')


def is_terraform(body: Any) -> bool:
    return isinstance(body, dict) and bool(blocks(body, "resource"))


def _camel(name: str) -> str:
    if name in _NAMES:
        return _NAMES[name]
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _api(body: Block) -> Node:
    """A kubernetes provider block as the API object's field: attributes camelCased (a map's keys kept as they are:
    labels, limits), nested blocks as objects, or lists where the provider repeats them."""
    out = Node()
    out.line = body.line
    for key, value in body.items():
        if isinstance(value, list) and value and all(isinstance(v, Block) for v in value):
            if key in _LISTS:
                out[_LISTS[key]] = [_api(v) for v in value]
            else:
                out[_camel(key)] = _api(value[0])
        else:
            out[_camel(key)] = value
    return out


def _kubernetes(address: str, kind: str, resource: Block, source: str) -> tuple[list[Definition], list[str]]:
    if kind == "manifest":
        manifest = resource.get("manifest")
        if not kubernetes.is_manifest(manifest):
            return [], [f"{address}: its manifest is {_said(manifest)}, known when Terraform runs"]
        return kubernetes.probe(Document(source, 0, manifest))[0], []
    api_version, api_kind = KUBERNETES_KINDS[kind]
    body = _api(resource)
    obj = Node(apiVersion=api_version, kind=api_kind, **body)
    obj.line = resource.line
    return kubernetes.probe(Document(source, 0, obj))[0], []


def _said(value: Any) -> str:
    return str(value)[:200] if isinstance(value, Unknown) else f"a {type(value).__name__}"


def _json(value: Any, what: str, address: str, source: str) -> tuple[Any, str | None]:
    """A JSON attribute as Terraform would send it: a value jsonencode'd, a string of JSON (a heredoc), or the JSON
    file `file(...)` names beside the configuration; (None, why) where it is known only when Terraform runs."""
    if isinstance(value, Unknown):
        found = _FILE.match(value)
        if found is None:
            return None, f"{address}: {what} is {str(value)[:200]}, known when Terraform runs"
        path = os.path.join(os.path.dirname(source), found.group(1))
        if not os.path.isfile(path):
            return None, f"{address}: {what} is {str(value)[:200]}, and {path} is not there"
        value = documents.text(path)
    if isinstance(value, str):
        try:
            return unknowns(json.loads(value)), None
        except (json.JSONDecodeError, RecursionError):
            if "${" in value or "%{" in value:
                return None, f"{address}: {what} is a template, rendered when Terraform runs"
            raise UsageError(f"{source}:{getattr(value, 'line', '') or ''}: {address}: {what} is not JSON") from None
    return value, None


def _ecs(address: str, resource: Block, source: str) -> tuple[list[Definition], list[str]]:
    containers, why = _json(resource.get("container_definitions"), "container_definitions", address, source)
    if why:
        return [], [why]
    if not isinstance(containers, list):
        raise UsageError(f"{source}:{resource.line}: {address}: container_definitions must be a list of containers")
    body = Node(
        family=address,
        containerDefinitions=containers,
        requiresCompatibilities=resource.get("requires_compatibilities"),
        ipcMode=resource.get("ipc_mode"),
        memory=resource.get("memory"),
    )
    body.line = resource.line
    return ecs.probe(Document(source, 0, body)), []


def _batch(address: str, resource: Block, source: str) -> tuple[list[Definition], list[str]]:
    body = Node(jobDefinitionName=address, platformCapabilities=resource.get("platform_capabilities"))
    body.line = resource.line
    for attribute, key in (("container_properties", "containerProperties"), ("node_properties", "nodeProperties")):
        if resource.get(attribute) is not None:
            value, why = _json(resource[attribute], attribute, address, source)
            if why:
                return [], [why]
            body[key] = value
    if "containerProperties" not in body and "nodeProperties" not in body:
        return [], [f"{address}: no container_properties or node_properties (an EKS job: not read)"]
    return ecs.probe(Document(source, 0, body)), []


def _docker(address: str, resource: Block, source: str) -> tuple[list[Definition], list[str]]:
    """docker_container as the container docker inspect would show: sizes in MiB (the provider's), mounts."""
    unknown: list[str] = []

    def mib(key: str) -> int | None:
        value = resource.get(key)
        if isinstance(value, Unknown):
            unknown.append(f"{key} is {value}")
            return None
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**30:
            raise UsageError(f"{source}:{resource.line}: {address}: {key} must be a whole number of MiB")
        return value * MiB

    host: dict[str, Any] = {"ShmSize": mib("shm_size"), "Memory": mib("memory"), "Mounts": [], "Tmpfs": {}}
    ipc = resource.get("ipc_mode")
    if isinstance(ipc, Unknown):
        unknown.append(f"ipc_mode is {ipc}")
    elif isinstance(ipc, str):
        host["IpcMode"] = ipc
    mounts: list[dict] = []
    for mount in blocks(resource, "mounts"):
        target = at_shm(mount.get("target", ""))
        options = next(iter(blocks(mount, "tmpfs_options")), Block())
        size = options.get("size_bytes")
        kind = mount.get("type")
        if target and kind == "tmpfs":
            host["Mounts"].append({"Target": SHM, "Type": "tmpfs", "TmpfsOptions": {"SizeBytes": size}})
        elif target:
            mounts.append({"Destination": SHM, "Type": kind, "Source": mount.get("source")})
    for volume in blocks(resource, "volumes"):
        if at_shm(volume.get("container_path", "")):
            named = volume.get("volume_name")
            mounts.append(
                {"Destination": SHM, "Type": "volume" if named else "bind", "Source": volume.get("host_path") or named}
            )
    tmpfs = resource.get("tmpfs")
    if isinstance(tmpfs, dict) and isinstance(tmpfs.get(SHM), str):
        host["Tmpfs"][SHM] = tmpfs[SHM]
    gpus = resource.get("gpus")
    if isinstance(gpus, str) and not isinstance(gpus, Unknown):
        count = -1 if gpus == "all" else int(gpus) if gpus.isdigit() else 0
        host["DeviceRequests"] = [{"Capabilities": [["gpu"]], "Count": count, "DeviceIDs": []}]
    env = [e for e in resource.get("env") or [] if isinstance(e, str)] if isinstance(resource.get("env"), list) else []
    labels = {str(b.get("label")): b.get("value") for b in blocks(resource, "labels")}
    config = {
        "Image": resource.get("image"),
        "Cmd": resource.get("command"),
        "Entrypoint": resource.get("entrypoint"),
        "Env": env,
        "Labels": labels,
    }
    probed = docker.facts_from_inspect({"Name": address, "HostConfig": host, "Config": config, "Mounts": mounts})
    shm, unreadable = docker.declared_shm(
        probed,
        resource.get("shm_size"),
        unresolved=any(why.startswith("shm_size") for why in unknown),
        when="Terraform runs",
        shown=lambda size: f"shm_size: {size // MiB}",
        host="the Docker host",
    )
    if any(why.startswith("ipc_mode") for why in unknown):
        unreadable += (f"{SHM_SIZE_UNKNOWN} (ipc_mode is {ipc}: known when Terraform runs)",)
    facts = replace(
        probed.facts,
        target=Target("workload", f"{source}:{address}", file=source, line=resource.line),
        shm=shm,
        unreadable=unreadable,
    )
    return [Definition(facts, probed.loader_label)], []


def probe(body: Node, source: str) -> tuple[list[Definition], list[str]]:
    """(the targets of every resource that runs a container, why others that might were not read)."""
    found: list[Definition] = []
    passed_over: list[str] = []
    for block in blocks(body, "resource"):
        if len(block.labels) != 2:
            continue
        kind, name = block.labels
        address = f"{kind}.{name}"
        short = re.sub(r"_v\d+$", "", kind.removeprefix("kubernetes_"))
        if kind == "aws_ecs_task_definition":
            more, why = _ecs(address, block, source)
        elif kind == "aws_batch_job_definition":
            more, why = _batch(address, block, source)
        elif kind == "docker_container":
            more, why = _docker(address, block, source)
        elif kind.startswith("kubernetes_") and (short in KUBERNETES_KINDS or short == "manifest"):
            more, why = _kubernetes(address, short, block, source)
        else:
            continue
        found.extend(more)
        passed_over.extend(why)
    return found, passed_over


SUFFIXES = (".tf", ".tf.json")
RESOURCES = "aws_ecs_task_definition, aws_batch_job_definition, kubernetes_* pods and controllers, docker_container"


def read(text: str, source: str) -> tuple[list[Definition], list[str]]:
    """A .tf file (HCL) or a .tf.json (Terraform's JSON syntax, its "${...}" strings as expressions): (targets,
    why resources that might run a container were not read). A file that is not HCL is bad input (UsageError)."""
    from .hcl import parse

    if source.endswith(".json"):
        parsed = documents.parse(text, source)
        body = _from_json(parsed[0].body if parsed else {}, source)
    else:
        try:
            body = parse(text, source)
        except documents.Unparsable as e:
            raise UsageError(str(e)) from None  # a .tf is Terraform's: one that does not parse is an error
    found, passed_over = probe(body, source)
    said = [f"{source}: {why}" for why in passed_over]  # each names its resource; the file first, as lint's lines do
    return [replace(d, facts=replace(d.facts, form="terraform")) for d in found], said


def _from_json(body: Any, source: str) -> Node:
    """Terraform's JSON syntax as the HCL reader gives it: `resource.TYPE.NAME` objects as labelled blocks, lists of
    objects as repeated blocks, a "${expression}" string as that expression's value (jsonencode(...) included)."""
    from .hcl import parse

    def value(item: Any) -> Any:
        if isinstance(item, str) and item.startswith("${") and item.endswith("}") and item.count("${") == 1:
            try:
                return parse(f"v = {item[2:-1]}\n", source).get("v")
            except (documents.Unparsable, UsageError):
                return Unknown(item)
        if isinstance(item, str) and "${" in item:
            return Unknown(item)
        if isinstance(item, list) and item and all(isinstance(i, dict) for i in item):
            return [block(i) for i in item]
        return item

    def block(item: dict, labels: tuple[str, ...] = ()) -> Block:
        out = Block({k: value(v) for k, v in item.items()})
        out.labels = labels
        return out

    out = Node()
    resources = body.get("resource") if isinstance(body, dict) else None
    found: list[Block] = []
    for kind, named in (resources or {}).items() if isinstance(resources, dict) else ():
        for name, item in (named or {}).items() if isinstance(named, dict) else ():
            for each in item if isinstance(item, list) else [item]:
                if isinstance(each, dict):
                    found.append(block(each, (kind, name)))
    out["resource"] = found
    return out
