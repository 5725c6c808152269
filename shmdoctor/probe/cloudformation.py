"""CloudFormation templates (YAML with `!Ref`/`!Sub`/`!GetAtt`/... tags, or JSON) -> the targets of their ECS task
definitions and Batch job definitions, read as the definitions CloudFormation registers (probe/ecs.py):
`AWS::ECS::TaskDefinition` (`ContainerDefinitions`, `LinuxParameters.SharedMemorySize` and `Tmpfs` in MiB,
`IpcMode`, `RequiresCompatibilities`, `Memory`) and `AWS::Batch::JobDefinition` (`ContainerProperties`, or
`NodeProperties.NodeRangeProperties` for multinode; `PlatformCapabilities`). An intrinsic function (`!Ref`,
`{"Ref": ...}`, `Fn::Sub`, `!If`, ...) is unknown: its value is CloudFormation's when the stack is made. Each target
is named by the resource's logical ID. Other resources are passed over.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from . import ecs
from .documents import Definition, Document, Node
from .unknown import Unknown

KINDS = {"AWS::ECS::TaskDefinition": "task", "AWS::Batch::JobDefinition": "job"}
# A template's own marks, at a line's start: its version, or a resource's AWS:: type under Resources.
_MARK = re.compile(r"^AWSTemplateFormatVersion\s*:|^Resources\s*:(?:.*\n)*?\s+Type\s*:\s*['\"]?AWS::", re.M)


def looks_like(text: str) -> bool:
    """A YAML CloudFormation template (before it is parsed: its tags need a loader of their own)."""
    return bool(_MARK.search(text[:200_000]))


def is_template(body: Any) -> bool:
    if not isinstance(body, dict) or not isinstance(body.get("Resources"), dict):
        return False
    typed = [r.get("Type") for r in body["Resources"].values() if isinstance(r, dict)]
    return "AWSTemplateFormatVersion" in body or any(str(t).startswith(("AWS::", "Custom::")) for t in typed)


def _plain(value: Any) -> Any:
    """The ECS/Batch API's shape of a CloudFormation value: keys with their first letter lowered
    (`LinuxParameters` -> `linuxParameters`), intrinsic functions as Unknown, lines kept. Iterative."""
    if _intrinsic(value):
        return Unknown(_said(value))
    if not isinstance(value, (dict, list)):
        return value
    root: Any = _copy(value)
    stack = [root]
    while stack:
        node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if isinstance(node, dict):
            node.clear()
        for key, child in items:
            new = Unknown(_said(child)) if _intrinsic(child) else _copy(child)
            if isinstance(new, (dict, list)):
                stack.append(new)
            if isinstance(node, dict):
                node[key[:1].lower() + key[1:] if isinstance(key, str) else key] = new
            else:
                node[key] = new
    return root


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        out = Node(value)
        out.line = getattr(value, "line", None)
        return out
    return list(value) if isinstance(value, list) else value


def _intrinsic(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and str(next(iter(value))).startswith(("Ref", "Fn::"))


def _said(value: Any) -> str:
    key, argument = next(iter(value.items()))
    return f"{key}: {argument}"[:200]


def probe(doc: Document) -> tuple[list[Definition], list[str]]:
    """(one Definition per container of each task or job definition, the other resources' 'Type/logical ID')."""
    found: list[Definition] = []
    passed_over: list[str] = []
    for logical, resource in doc.body["Resources"].items():
        kind = KINDS.get(str(resource.get("Type"))) if isinstance(resource, dict) else None
        if kind is None:
            continue
        props = _plain(resource.get("Properties") or {})
        if isinstance(props, Unknown) or not isinstance(props, dict):
            passed_over.append(f"{resource['Type']}/{logical} (its Properties are {props})")
            continue
        body = Node(
            {"family": str(logical), "containerDefinitions": props.get("containerDefinitions") or []}
            if kind == "task"
            else {"jobDefinitionName": str(logical)}
        )
        body.line = getattr(resource, "line", None)
        for key in ("requiresCompatibilities", "ipcMode", "memory", "containerProperties", "nodeProperties"):
            if key in props:
                body[key] = props[key]
        body["platformCapabilities"] = props.get("platformCapabilities")
        if kind == "job" and "containerProperties" not in body and "nodeProperties" not in body:
            passed_over.append(f"{resource['Type']}/{logical} (no ContainerProperties or NodeProperties: EKS)")
            continue
        for definition in ecs.probe(Document(doc.source, doc.index, body)):
            found.append(replace(definition, facts=replace(definition.facts, form="cloudformation")))
    return found, passed_over
