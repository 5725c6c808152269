"""One editor a form: a fix's numbers written into the parsed definition of one target (a compose service, a pod
spec and its container, an ECS or Batch container, an Azure ML job, a Quadlet unit's lines). Each returns what it
wrote, in the file's words, or raises Refused with why it writes nothing: the fix is then printed, not written."""

from __future__ import annotations

import re
import shlex
from typing import Any

from ..model import SHM, Facts, Fix
from ..probe.mountpath import at_shm
from ..probe.runargs import Arg, RunArgs, parse
from ..probe.shell import words
from ..sizes import MiB, docker_size, k8s_quantity, parse_quantity
from .patch import Unpatchable


class Refused(Exception):
    """Why a fix is printed instead of written."""


def _set(node: dict, key: str, value: Any, what: str) -> str:
    """node[key] = value, quoted as the value it replaces was; refused where that value comes from elsewhere."""
    old: Any = node.get(key) if isinstance(node, dict) else None
    if isinstance(old, str) and "$" in old:
        raise Refused(f"{what} is {old}, set from a variable: set the variable where it is defined instead")
    _shared(old, what)
    node[key] = _like(old, value)
    return f"{what}: {value}"


def _like(old: Any, value: Any) -> Any:
    """value, quoted as the string it replaces was (ruamel keeps a quoted scalar's quotes in its type)."""
    return type(old)(value) if isinstance(old, str) and type(old) is not str else value


def _shared(node: Any, what: str) -> None:
    """Refused where the node is a YAML anchor: what aliases it uses the same value, theirs to change too."""
    anchor = getattr(getattr(node, "anchor", None), "value", None)
    if anchor:
        raise Refused(f"{what} is the anchor &{anchor}, shared with what aliases it: change it there by hand")


def compose(services: dict, name: str, fix: Fix, facts: Facts) -> list[str]:
    if facts.swarm is not None:
        raise Refused("docker stack ignores shm_size (moby#26714): a tmpfs volume at /dev/shm is added by hand")
    if facts.ipc.mode == "container" and facts.ipc.owner:  # the /dev/shm is the owner's
        if not isinstance(services.get(facts.ipc.owner), dict):
            raise Refused(f"its /dev/shm is {facts.ipc.owner}'s, which this file does not define")
        name = facts.ipc.owner
    service = services[name]
    _shared(service, f"service {name}")
    done = [f"on service {name}, the IPC owner"] if name != facts.target.name.rsplit(":", 1)[-1] else []
    if fix.ipc == "private":
        done.append(_set(service, "ipc", "private", "ipc"))
    if fix.shm_bytes and facts.shm.source == "tmpfs":
        done.append(_compose_tmpfs(service, fix.shm_bytes))
    elif fix.shm_bytes:
        done.append(_set(service, "shm_size", docker_size(fix.shm_bytes), "shm_size"))
    if fix.memory_bytes:
        deploy = service.get("deploy")
        resources = deploy.get("resources") if isinstance(deploy, dict) else None
        limits = resources.get("limits") if isinstance(resources, dict) else None
        if isinstance(limits, dict) and "memory" in limits or "compose-deploy-memory" in facts.flags:
            if not isinstance(limits, dict):
                raise Refused("deploy.resources.limits is not a mapping here")
            done.append(_set(limits, "memory", docker_size(fix.memory_bytes), "deploy.resources.limits.memory"))
        else:
            done.append(_set(service, "mem_limit", docker_size(fix.memory_bytes), "mem_limit"))
    return done


def tmpfs_resized(options: str, size: str) -> str:
    """A tmpfs at /dev/shm as Docker and Podman write it (PATH:OPTIONS), of the size given and read-write: every
    other option kept in its place (mode, uid, nr_inodes, noexec...), the size last, `ro` dropped (ro and rw are one
    flag, the last written wins: moby's MergeTmpfsOptions)."""
    kept = [o for o in options.split(",") if o and o != "ro" and not o.startswith("size=")]
    return f"{SHM}:" + ",".join([*kept, f"size={size}"])


def _compose_tmpfs(service: dict, size: int) -> str:
    """The tmpfs entry at /dev/shm given the size, and read-write (it overrides shm_size)."""
    entries = service.get("tmpfs")
    listed = entries if isinstance(entries, list) else [entries]
    for i, entry in enumerate(listed):
        path, _, options = str(entry).partition(":")
        if at_shm(path):
            value = tmpfs_resized(options, docker_size(size))
            if isinstance(entries, list):
                entries[i] = _like(entry, value)
            else:
                service["tmpfs"] = _like(entry, value)
            return f"tmpfs: {value}"
    raise Refused("its /dev/shm is a tmpfs volume, not a tmpfs: entry: change its size there")


def kubernetes(obj: dict, spec: dict, container: dict, fix: Fix, facts: Facts, made: set[int]) -> list[str]:
    """A memory-backed emptyDir at /dev/shm in the container (its own volume grown where it has one), and its memory
    limit raised where the fix asks. `made`: ids of volumes written in this run (several containers of a pod share
    one)."""
    if fix.ipc:
        raise Refused("the fix changes hostIPC, a security decision: printed, not written")
    done = []
    if fix.shm_bytes:
        done.append(_empty_dir(spec, container, k8s_quantity(fix.shm_bytes), made))
    if fix.memory_bytes:
        resources = container.setdefault("resources", {})
        limits = resources.setdefault("limits", {}) if isinstance(resources, dict) else None
        if not isinstance(limits, dict):
            raise Refused("resources.limits is not a mapping here")
        done.append(_set(limits, "memory", k8s_quantity(fix.memory_bytes), "resources.limits.memory"))
    return done


def _empty_dir(spec: dict, container: dict, size: str, made: set[int]) -> str:
    volumes = spec.get("volumes")
    if volumes is None:
        volumes = spec["volumes"] = []
    mounts = container.get("volumeMounts")
    mount = next((m for m in mounts or [] if at_shm(m.get("mountPath", ""))), None)
    if mount is not None:  # its own volume at /dev/shm: an emptyDir made memory-backed and grown
        volume = next((v for v in volumes if v.get("name") == mount.get("name")), None)
        if volume is None or not isinstance(volume.get("emptyDir"), dict):
            raise Refused(f"the volume at {SHM} is not an emptyDir: replace it by hand")
        _shared(volume, f"volume {volume.get('name')}")
        if mount.get("readOnly") in (True, "true"):
            del mount["readOnly"]
        empty_dir = volume["emptyDir"]
        if empty_dir.get("medium") != "Memory":
            empty_dir["medium"] = "Memory"
        old = empty_dir.get("sizeLimit")
        size = max(size, str(old), key=parse_quantity) if old not in (None, "") else size  # never smaller
        _set(empty_dir, "sizeLimit", size, "sizeLimit")
        return f"volume {volume['name']}: emptyDir medium Memory, sizeLimit {size}"
    names = {v.get("name") for v in volumes if isinstance(v, dict)}
    name = next(n for n in ("dshm", "shmdoctor-dshm") + tuple(f"dshm-{i}" for i in range(2, 99)) if n not in names)
    mine = next((v for v in volumes if id(v) in made), None)  # added for another container of this pod
    if mine is not None:
        name = mine["name"]
        _set(mine["emptyDir"], "sizeLimit", max(size, mine["emptyDir"]["sizeLimit"], key=parse_quantity), "sizeLimit")
    else:
        volume = {"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": size}}
        volumes.append(volume)
        made.add(id(volumes[-1]))
    if mounts is None:
        mounts = container["volumeMounts"] = []
    mounts.append({"name": name, "mountPath": SHM})
    return f"volume {name}: emptyDir medium Memory, sizeLimit {size}, mounted at {SHM}"


def azureml(job: dict, fix: Fix, facts: Facts) -> list[str]:
    if not fix.shm_bytes:
        raise Refused("an Azure ML job's memory is its compute's instance type: choose a larger one")
    resources = job.get("resources")
    if resources is None:
        resources = job["resources"] = {}
    if not isinstance(resources, dict):
        raise Refused("resources is not a mapping here")
    return [_set(resources, "shm_size", docker_size(fix.shm_bytes), "resources.shm_size")]


def ecs(kind: str, definition: dict, container: dict, fix: Fix, facts: Facts) -> list[str]:
    """linuxParameters.sharedMemorySize (or its tmpfs at /dev/shm) and the memory, in MiB, as ECS and Batch take it."""
    if "shm-fixed" in facts.flags:
        raise Refused("Fargate cannot size /dev/shm: the definition would ask for a size Fargate ignores")
    done = []
    if fix.shm_bytes:
        size = -(-fix.shm_bytes // MiB)
        params = _first(container, "linuxParameters", {})
        tmpfs = next((t for t in params.get("tmpfs") or [] if at_shm(t.get("containerPath", ""))), None)
        if tmpfs is not None:
            done.append(_set(tmpfs, "size", size, "linuxParameters.tmpfs size"))
            options = tmpfs.get("mountOptions")
            if isinstance(options, list) and "ro" in options:  # written read-write, as every tmpfs fix is
                tmpfs["mountOptions"] = [o for o in options if o != "ro"]
                done.append("linuxParameters.tmpfs mountOptions: without ro")
        else:
            done.append(_set(params, "sharedMemorySize", size, "linuxParameters.sharedMemorySize"))
    if fix.memory_bytes:
        memory = -(-fix.memory_bytes // MiB)
        requirement = next((r for r in container.get("resourceRequirements") or [] if r.get("type") == "MEMORY"), None)
        if requirement is not None or (kind == "job" and "memory" not in container):
            if requirement is None:
                container.setdefault("resourceRequirements", []).append({"type": "MEMORY", "value": str(memory)})
                done.append(f"resourceRequirements MEMORY: {memory}")
            else:
                done.append(_set(requirement, "value", str(memory), "resourceRequirements MEMORY"))
        else:
            _first(container, "memory", memory)
            done.append(_set(container, "memory", memory, "memory"))
        task = definition.get("memory")
        if kind == "task" and task not in (None, "") and str(task).isdigit() and int(task) < memory:
            done.append(_set(definition, "memory", str(memory) if isinstance(task, str) else memory, "task memory"))
    return done


def _first(node: dict, key: str, value: Any) -> Any:
    """node[key], added as its first key where it has none: a line after the object's opening brace, whatever the
    file does with the lines of its last key (an array kept on one line, which a dump would spread)."""
    if key not in node:
        items = list(node.items())
        node.clear()
        node.update([(key, value), *items])
    return node[key]


_SHM_SIZE_FLAG = re.compile(r"(--shm-size[= ])(\S+)")
_MEMORY_FLAG = re.compile(r"((?:--memory|-m)[= ])(\S+)")


def quadlet(lines: list[str], fix: Fix, facts: Facts) -> list[str]:
    """ShmSize= (or the --shm-size already in PodmanArgs=) and PodmanArgs=--memory= in the [Container] section."""
    if fix.ipc or facts.shm.source not in ("podman-shm",) and fix.shm_bytes:
        raise Refused(f"its /dev/shm is {facts.shm.detail or facts.shm.source}: change it there by hand")
    if facts.ipc.mode == "container" and fix.shm_bytes:  # Pod=: the container's own ShmSize= is not its size
        raise Refused(f"its /dev/shm is {facts.ipc.owner}'s: size it in that unit's [Pod] section")
    section = [i for i, line in enumerate(lines) if line.strip() == "[Container]"]
    if not section:
        raise Refused("no [Container] section")
    start = section[-1] + 1
    end = next((i for i in range(start, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    done = []
    for wanted, key, flag in ((fix.shm_bytes, "ShmSize", _SHM_SIZE_FLAG), (fix.memory_bytes, None, _MEMORY_FLAG)):
        if not wanted:
            continue
        value = docker_size(wanted)
        keyed = [i for i in range(start, end) if key and lines[i].split("=", 1)[0].strip() == key]
        podman_args = [i for i in range(start, end) if lines[i].lstrip().startswith("PodmanArgs=")]
        flagged = [i for i in podman_args if flag.search(lines[i])]
        if flagged:  # PodmanArgs come last on podman's command line: theirs is the size that counts
            i = flagged[-1]
            lines[i] = flag.sub(lambda m, v=value: m.group(1) + v, lines[i])  # type: ignore[misc]
            done.append(f"PodmanArgs {flag.search(lines[i]).group(0)}")  # type: ignore[union-attr]
        elif keyed:
            lines[keyed[-1]] = f"{key}={value}\n"
            done.append(f"{key}={value}")
        else:
            last = max((i for i in range(start, end) if lines[i].strip()), default=start - 1)
            written = f"{key}={value}" if key else f"PodmanArgs=--memory={value}"
            lines.insert(last + 1, written + "\n")
            end += 1
            done.append(written)
    return done


def run_args(run: RunArgs, fix: Fix, facts: Facts) -> tuple[list[tuple[Arg, str, bool]], list[str]]:
    """A run command's flags set to the fix: (the argument, the argument it becomes, or True: a new argument added
    after it), and what was written. The flag the engine takes (the last) is changed where the command has it; a new
    one goes after `run`. Refused where the value is a variable's or /dev/shm is not the engine's own to size."""
    edits: list[tuple[Arg, str, bool]] = []
    done: list[str] = []
    if fix.ipc:
        found = run.last("--ipc")
        if found is None or found[1] is None or found[1].unknown:
            raise Refused(f"the fix changes the IPC namespace (--ipc={fix.ipc}): printed, not written")
        edits.append(_flag_edit(found, "--ipc", fix.ipc))
        done.append(f"--ipc={fix.ipc}")
    if fix.shm_bytes:
        size = docker_size(fix.shm_bytes)
        if facts.shm.source == "tmpfs":
            edits.append(_tmpfs_edit(run, size))
        elif facts.shm.source not in ("docker-shm", "podman-shm") or facts.ipc.mode == "container":
            raise Refused(f"its /dev/shm is {facts.shm.detail or facts.shm.source}: change it there by hand")
        else:
            edits.append(_set_flag(run, ("--shm-size",), "--shm-size", size))
        done.append(f"--shm-size={size}" if facts.shm.source != "tmpfs" else f"--tmpfs {SHM}:size={size}")
    if fix.memory_bytes:
        size = docker_size(fix.memory_bytes)
        edits.append(_set_flag(run, ("--memory", "-m"), "--memory", size))
        done.append(f"--memory={size}")
    return edits, done


def _set_flag(run: RunArgs, names: tuple[str, ...], name: str, value: str) -> tuple[Arg, str, bool]:
    found = run.last(*names)
    if found is None:
        return run.at, f"{name}={value}", True
    return _flag_edit(found, name, value)


def _flag_edit(found: tuple[Arg, Arg | None], name: str, value: str) -> tuple[Arg, str, bool]:
    flag, old = found
    if old is None:
        raise Refused(f"{flag.text} has no value")
    if old.unknown:
        raise Refused(f"{flag.text} is {old.text}, set from a variable: set the variable where it is defined instead")
    if old.glued:
        return flag, f"{flag.text[: len(flag.text) - len(old.text)]}{value}", False
    return old, value, False


def _tmpfs_edit(run: RunArgs, size: str) -> tuple[Arg, str, bool]:
    """The --tmpfs at /dev/shm given the size and made read-write (a --mount's tmpfs-size is its own, in bytes)."""
    for found in reversed(run.values("--tmpfs")):
        flag, value = found
        path, _, options = value.text.partition(":") if value is not None else ("", "", "")
        if value is not None and not value.unknown and at_shm(path):
            return _flag_edit(found, "--tmpfs", tmpfs_resized(options, size))
    raise Refused("its /dev/shm is a --mount of type tmpfs: set its tmpfs-size there by hand")


def apply_args(text: str, edits: list[tuple[Arg, str, bool]], quote) -> str:
    """The text with each argument replaced by its new one, or a new one added after it (quoted by `quote`), from
    the end backwards so that each edit's place stays where it was read."""
    for arg, new, after in sorted(edits, key=lambda e: e[0].end if e[2] else e[0].start, reverse=True):
        if arg.start < 0:
            raise Unpatchable(f"{arg.text} is not written as one word in the file")
        if after:
            text = text[: arg.end] + " " + quote(new) + text[arg.end :]
        else:
            text = text[: arg.start] + quote(new) + text[arg.end :]
    return text


def github_actions(holder: dict, key: str, fix: Fix, facts: Facts) -> list[str]:
    """The job container's (or service's) `options` string given the flags; a `container:` written as an image
    becomes a mapping with its image and options."""
    spec = holder[key]
    if isinstance(spec, str):
        spec = holder[key] = type(holder)([("image", spec)])  # the holder's mapping type: ruamel's keeps comments
    _shared(spec, f"jobs {key}")
    written = spec.get("options")
    options = str(written or "")
    run = parse(words(options, "options"), "docker", Arg("options", 0, 0), image=False)
    edits, done = run_args(run, fix, facts)
    added = [shell_word(new) for _, new, after in edits if after]  # first in the string
    new = " ".join([*added, apply_args(options, [e for e in edits if not e[2]], shell_word).strip()]).strip()
    spec["options"] = _like(written, new)
    return [f"options: {new}"] if done else []


def shell_word(text: str) -> str:
    """A shell word: as it is where it needs no quotes (sizes, flags), else quoted."""
    return text if re.fullmatch(r"[\w@%+=:,./-]+", text) else shlex.quote(text)
