"""SkyPilot task YAML -> the Facts of the task's processes.

A task runs on the VM itself, or, with `resources.image_id: docker:IMAGE`, in a container SkyPilot starts with
`--shm-size` of a third of the VM's available memory (min(MemAvailable × 0.3 × 1.1, 200e9); skypilot
sky/provision/docker_utils.py `_auto_configure_shm`) unless `config.docker.run_options` gives one; on Kubernetes its
pod's /dev/shm is a memory-backed volume as large as the node allows. Either way the size follows the machine, which
the file does not tell: judged as the host's /dev/shm (unsized only against a need; then the one thing to check is
`df -h /dev/shm` in the task). A `--shm-size` in `config.docker.run_options` is read as docker's; a docker run in
`setup` or `run` is a container of its own, read as a script's.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..model import SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Shm
from . import shell
from .documents import Definition, Document, target
from .runargs import Arg, facts, parse
from .workload import idle, ml_signs, serving

KEYS = frozenset(
    ("name", "workdir", "num_nodes", "resources", "envs", "secrets", "file_mounts", "setup", "run", "service",
     "config", "volumes", "event_callback", "inputs", "outputs")
)  # fmt: skip
AUTO = (
    "SkyPilot's /dev/shm follows the machine (its docker runtime: --shm-size of 30% × 1.1 of the VM's available "
    "memory, at most 200 GB; the VM's own otherwise): check it with `sky exec CLUSTER df -h /dev/shm`"
)


_RESOURCE_KEYS = ("accelerators", "image_id", "cloud", "infra", "instance_type", "use_spot", "any_of", "ordered")


def is_task(body: Any) -> bool:
    """A SkyPilot task: only SkyPilot's keys, with a `run` or resources of SkyPilot's (not a chart's limits)."""
    if not isinstance(body, dict) or not body or not set(map(str, body)) <= KEYS:
        return False
    resources = body.get("resources")
    return "run" in body or isinstance(resources, dict) and any(k in resources for k in _RESOURCE_KEYS)


def _resources(body: dict) -> dict:
    resources = body.get("resources")
    if isinstance(resources, dict):
        for key in ("any_of", "ordered"):  # candidates: the first one's image and accelerators
            if isinstance(resources.get(key), list) and resources[key] and isinstance(resources[key][0], dict):
                return {**resources, **resources[key][0]}
        return resources
    return {}


def _accelerators(value: Any) -> str | None:
    """'A100:8', {A100: 8}, or a list of candidates -> the GPU count ('1' where no count is said)."""
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict) and value:
        count = next(iter(value.values()))
        return str(count) if count is not None else "1"
    if isinstance(value, str) and value:
        match = re.match(r"[^:]+(?::(\d+(?:\.\d+)?))?$", value)
        return (match.group(1) or "1") if match else "some"
    return None


def _docker_runs(doc: Document) -> list[Definition]:
    """The docker / podman run commands of `setup` and `run` (scripts SkyPilot runs on the VM): each a container of
    its own, judged as a script's, at its line in the file (a literal block's lines are the file's, one for one)."""
    out = []
    for key in ("setup", "run"):
        script, at = doc.body.get(key), getattr(doc.body, "key_lines", {}).get(key)
        if not isinstance(script, str) or at is None or not re.search(r"\b(?:docker|podman|nerdctl)\b", script):
            continue
        for found in shell.probe(script, doc.source):
            line = at + (found.facts.target.line or 0)
            tgt = replace(found.facts.target, name=f"{doc.source}:{line}", line=line)
            out.append(replace(found, facts=replace(found.facts, target=tgt), loader_at=f"{doc.source}:{line}"))
    return out


def probe(doc: Document) -> list[Definition]:
    body = doc.body
    resources = _resources(body)
    image_id = resources.get("image_id")
    image = image_id[len("docker:") :] if isinstance(image_id, str) and image_id.startswith("docker:") else None
    run, setup = body.get("run"), body.get("setup")
    command = [c for c in (setup, run) if isinstance(c, str)]
    config = body.get("config")
    docker = config.get("docker") if isinstance(config, dict) else None
    docker = docker if isinstance(docker, dict) else {}
    options = docker.get("run_options")
    options = [options] if isinstance(options, str) else options if isinstance(options, list) else []
    name = str(body.get("name") or "task")
    tgt = target("workload", doc.source, name, body)
    gpus = _accelerators(resources.get("accelerators"))
    if image and any("--shm-size" in str(o) for o in options):  # the task's own size, as docker reads it
        args = [Arg(w) for o in options for w in str(o).split()]
        try:
            read = facts(parse(args, "docker", Arg("run_options"), image=False), tgt, assumed_image=image, form="shell")
        except UsageError as e:
            raise UsageError(f"{doc.source}: config.docker.run_options: {e}") from None
        shm, ipc, unreadable = read.facts.shm, read.facts.ipc, read.facts.unreadable
    else:
        shm, ipc, unreadable = Shm.unmeasured(None, "host", AUTO), Ipc("private"), (f"{SHM_SIZE_UNKNOWN} ({AUTO})",)
    return [
        *_docker_runs(doc),
        Definition(
            Facts(
                target=tgt,
                shm=shm,
                ipc=ipc,
                memory=Memory(None, None),
                runtime="container" if image else "none",
                gpus=gpus,
                ml_signs=ml_signs(image, command),
                server=serving(image, None, command),
                flags=idle(image, command),
                unreadable=unreadable,
                form="shell",
            ),
            None,
            f"{doc.source}:{name}",
        ),
    ]
