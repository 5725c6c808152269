"""Podman Quadlet units (`*.container`, podman-systemd.unit(5)) -> the Facts of the container each one starts.

The [Container] section says what `podman run` gets: `ShmSize=`, `Tmpfs=` and `Volume=` at /dev/shm, `Mount=`
of a tmpfs there, and flags Quadlet has no key for in `PodmanArgs=` (`--shm-size`, `--ipc`, `--memory`). As Podman
applies them: a mount at /dev/shm wins, then `--ipc=host` (the host's) or `none`, else Podman's own shm mount, sized
by ShmSize / --shm-size (64000k by default).

`Pod=NAME.pod` puts the container in a pod: its IPC namespace and /dev/shm are the pod's (podman#14609, a
container's ShmSize is not its size there), sized by the `.pod` unit beside it (`[Pod] ShmSize=`, or
`PodmanArgs=--shm-size=`); without that unit the size is unknown. Keys came in different releases, and Quadlet
rejects a key it does not know: `[Container] ShmSize=` Podman 4.7 (#19230), `.pod` units 5.0 (#20762),
`[Pod] ShmSize=` 5.4 (#24899; before it, `PodmanArgs=--shm-size=` in the .pod).
"""

from __future__ import annotations

import os
import shlex

from ..errors import UsageError
from ..model import PODMAN_DEFAULT_SHM, SHM, SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Shm, Target
from ..sizes import parse_size, parse_tmpfs_size
from . import documents
from .documents import STDIN, Definition
from .workload import amd_gpus, ml_signs

SUFFIX = ".container"
POD_SUFFIX = ".pod"


def is_unit(text: str) -> bool:
    """An INI-style Quadlet .container unit (stdin has no file name to tell it): a [Container] section line."""
    return any(line.strip() == "[Container]" for line in text.splitlines()[:1000])


def parse(text: str, source: str, section: str = "Container") -> dict[str, list[tuple[int, str]]]:
    """The section's keys -> [(line, value)], repeated keys kept in order; `\\` continues a line. UsageError with
    file:line for a line that is neither a section, a comment nor KEY=VALUE."""
    keys: dict[str, list[tuple[int, str]]] = {}
    current, pending, start, found = None, "", 0, False
    for number, raw in enumerate(text.splitlines(), 1):
        line = (pending + " " + raw.strip()) if pending else raw.strip()
        start = start if pending else number
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            found = found or current == section
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{source}:{start}: not a KEY=VALUE line of a Quadlet unit")
        if current == section:
            keys.setdefault(key.strip(), []).append((start, value.strip()))
    if not keys and not found:
        kind = SUFFIX if section == "Container" else POD_SUFFIX
        raise UsageError(f"{source}: no [{section}] section: not a Quadlet {kind} unit")
    return keys


class _Unit:
    def __init__(self, keys: dict[str, list[tuple[int, str]]], source: str):
        self.keys, self.source = keys, source
        self.args: list[tuple[int, str]] = []  # PodmanArgs, split as the shell would
        for line, value in keys.get("PodmanArgs", []):
            try:
                self.args.extend((line, arg) for arg in shlex.split(value))
            except ValueError as e:
                raise UsageError(f"{source}:{line}: PodmanArgs: {e}") from None

    @property
    def first_line(self) -> int:
        """The line of [Container]'s first key: where the container is defined."""
        return min(line for values in self.keys.values() for line, _ in values)

    def last(self, key: str) -> tuple[int, str] | None:
        return self.keys[key][-1] if self.keys.get(key) else None

    def flag(self, name: str) -> tuple[int, str] | None:
        """The last `--name=value` or `--name value` of PodmanArgs."""
        found = None
        for i, (line, arg) in enumerate(self.args):
            if arg.startswith(f"{name}="):
                found = (line, arg.split("=", 1)[1])
            elif arg == name and i + 1 < len(self.args):
                found = (line, self.args[i + 1][1])
        return found

    def size(self, found: tuple[int, str] | None, what: str) -> int | None:
        if found is None:
            return None
        try:
            return parse_size(found[1], what=what)
        except UsageError as e:
            raise UsageError(f"{self.source}:{found[0]}: {e}") from None

    def mount(self, unreadable: list[str]) -> Shm | None:
        """A Tmpfs=, Volume= or Mount= (or PodmanArgs --tmpfs / -v) at /dev/shm."""
        tmpfs = self.keys.get("Tmpfs", []) + self._values("--tmpfs")
        for _, value in tmpfs:
            path, _, options = value.partition(":")
            if path.rstrip("/") == SHM:
                opts = [o.strip() for o in options.split(",")]
                size = next((parse_tmpfs_size(o[5:]) for o in opts if o.startswith("size=")), None)
                if size is None:
                    unreadable.append(f"{SHM_SIZE_UNKNOWN} (Tmpfs={value}: no size, the kernel's half of memory)")
                return Shm.unmeasured(size, "tmpfs", f"Tmpfs={value}", "ro" in opts)
        for _, value in self.keys.get("Volume", []) + self._values("-v") + self._values("--volume"):
            parts = value.split(":")
            if len(parts) > 1 and parts[1].rstrip("/") == SHM:
                read_only = len(parts) > 2 and "ro" in parts[2].split(",")
                if parts[0].rstrip("/") == SHM:
                    unreadable.append(f"{SHM_SIZE_UNKNOWN} (Volume={value}: the host's, not in the unit)")
                    return Shm.unmeasured(None, "host", f"Volume={value}: the host's /dev/shm", read_only)
                unreadable.append(f"{SHM_SIZE_UNKNOWN} (Volume={value}: the volume's, not in the unit)")
                return Shm.unmeasured(None, "unknown", f"Volume={value}", read_only)
        for line, value in self.keys.get("Mount", []) + self._values("--mount"):
            fields = dict(f.partition("=")[::2] for f in value.split(","))
            if fields.get("type") == "tmpfs" and (fields.get("destination") or fields.get("target") or "") == SHM:
                size = self.size((line, fields["tmpfs-size"]), "tmpfs-size") if fields.get("tmpfs-size") else None
                return Shm.unmeasured(size, "tmpfs", f"Mount={value}", "ro" in fields or "readonly" in fields)
        return None

    def _values(self, flag: str) -> list[tuple[int, str]]:
        out = []
        for i, (line, arg) in enumerate(self.args):
            if arg.startswith(f"{flag}="):
                out.append((line, arg.split("=", 1)[1]))
            elif arg == flag and i + 1 < len(self.args):
                out.append((line, self.args[i + 1][1]))
        return out

    def facts(self, name: str) -> Facts:
        unreadable: list[str] = []
        ipc_written = self.flag("--ipc")
        mode = ipc_written[1] if ipc_written else "private"
        ipc = Ipc("host") if mode == "host" else Ipc("none") if mode == "none" else Ipc("private")
        if mode.startswith("container:"):
            ipc = Ipc("container", owner=mode.split(":", 1)[1])
        shm = self.mount(unreadable)
        pod = self.last("Pod")
        if pod is not None:  # the pod's IPC namespace and /dev/shm, whatever this unit says of them
            ipc = Ipc("container", owner=pod[1])
            shm = shm or self.pod_shm(pod, unreadable)
        if shm is None and mode == "host":
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (--ipc=host: the host's, not in the unit)")
            shm = Shm.unmeasured(None, "host-ipc", "PodmanArgs=--ipc=host (the host's /dev/shm)")
        elif shm is None and mode == "none":
            shm = Shm(False, None, None, None, "none", "PodmanArgs=--ipc=none")
        elif shm is None and ipc.mode == "container":
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (--ipc={mode}: that container's, not in the unit)")
            shm = Shm.unmeasured(None, "unknown", f"PodmanArgs=--ipc={mode}")
        elif shm is None:
            written = self.last("ShmSize") or self.flag("--shm-size")
            size = self.size(written, "ShmSize") or PODMAN_DEFAULT_SHM
            detail = f"ShmSize={written[1]}" if written else "no ShmSize: Podman's default 64000k"
            shm = Shm.unmeasured(size, "podman-shm", detail)
        memory = self.size(self.flag("--memory") or self.flag("-m"), "--memory")
        devices = [v for _, v in self.keys.get("AddDevice", []) + self._values("--device")]
        gpus = next((d.split("=", 1)[1] or "all" for d in devices if d.startswith("nvidia.com/gpu")), None)
        gpus = gpus or amd_gpus(devices, [p for _, v in self.keys.get("Environment", []) for p in v.split()])
        exec_ = self.last("Exec")
        return Facts(
            target=Target("service", f"{self.source}:{name}", file=self.source, line=self.first_line),
            shm=shm,
            ipc=ipc,
            memory=Memory(memory, None),
            runtime="podman",
            gpus=gpus,
            unreadable=tuple(unreadable),
            ml_signs=ml_signs((self.last("Image") or (0, ""))[1], exec_[1] if exec_ else ""),
        )

    def pod_shm(self, pod: tuple[int, str], unreadable: list[str]) -> Shm:
        """The /dev/shm of the pod `Pod=` names, from its .pod unit beside this one; unknown without it."""
        line, name = pod
        if not name.endswith(POD_SUFFIX) or os.sep in name:
            raise UsageError(f"{self.source}:{line}: Pod={name}: not the name of a Quadlet .pod unit (NAME.pod)")
        path = os.path.join(os.path.dirname(self.source), name)
        if self.source == STDIN or not os.path.isfile(path):
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Pod={name}: the pod's, and its unit is not beside this one)")
            return Shm.unmeasured(None, "podman-shm", f"Pod={name}: the pod's /dev/shm")
        unit = _Unit(parse(documents.text(path), path, "Pod"), path)
        written = unit.last("ShmSize") or unit.flag("--shm-size")
        if unit.flag("--ipc") or unit.flag("--share"):  # namespaces the pod shares otherwise: not told here
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Pod={name}: its PodmanArgs change what the pod shares)")
            return Shm.unmeasured(None, "unknown", f"Pod={name}: PodmanArgs of {path}")
        size = unit.size(written, "ShmSize") or PODMAN_DEFAULT_SHM
        said = f"ShmSize={written[1]}" if written else "no ShmSize: Podman's default 64000k"
        return Shm.unmeasured(size, "podman-shm", f"Pod={name}: the pod's /dev/shm ({path}: {said})")


def probe(text: str, source: str) -> list[Definition]:
    """The container a .container unit starts, named as systemd names its service (the file's stem)."""
    unit = _Unit(parse(text, source), source)
    return [Definition(unit.facts(os.path.basename(source)[: -len(SUFFIX)] or source))]
