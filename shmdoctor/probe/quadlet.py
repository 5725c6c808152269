"""Podman Quadlet units (`*.container`, podman-systemd.unit(5)) -> the Facts of the container each one starts.

Read as Quadlet and Podman read them (containers/podman: pkg/systemd/parser/unitfile.go, pkg/systemd/quadlet,
pkg/specgenutil/volumes.go). The unit, then its drop-ins (`NAME.container.d/*.conf`, `PREFIX-.container.d/`,
`container.d/`, each .conf name once, the most specific directory's, merged in name order). A line ending in a
backslash continues (joined as written, without a space). A list key (`Tmpfs=`, `Volume=`, `Mount=`, `PodmanArgs=`)
given empty clears what came before; a single key (`ShmSize=`, `Memory=`) is its last value. Quadlet writes `podman
run`'s arguments in its own order, PodmanArgs last, and Podman takes a repeated flag's last value: `ShmSize=` beside
`PodmanArgs=--shm-size` is PodmanArgs'. A mount at /dev/shm wins, then `--ipc=host` (the host's) or `none`, else
Podman's own shm mount, sized by --shm-size (64000k by default; 0: no limit, the kernel's default of half the memory).
`Mount=` takes Podman's spellings: `target`/`dst`/`dest`/`destination`, `ro`/`readonly`/`rw` with `=true|false`; an
option Podman refuses (`read-only`) is refused here too, and so are two mounts at /dev/shm (but one repeated, and a
`Tmpfs=` beside a tmpfs `Mount=`, which is the one mounted). Numbers are ASCII digits.

`Pod=NAME.pod` puts the container in a pod: its IPC namespace and /dev/shm are the pod's (podman#14609, a
container's ShmSize is not its size there), sized by the `.pod` unit beside it (`[Pod] ShmSize=`, or
`PodmanArgs=--shm-size=`); without that unit the size is unknown. Keys came in different releases, and Quadlet
rejects a key it does not know: `[Container] ShmSize=` Podman 4.7 (#19230), `.pod` units 5.0 (#20762),
`[Pod] ShmSize=` 5.4 (#24899; before it, `PodmanArgs=--shm-size=` in the .pod).
"""

from __future__ import annotations

import csv
import os
import shlex

from ..errors import UsageError
from ..loader import LOADER_LABEL
from ..model import PODMAN_DEFAULT_SHM, SHM, SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Shm, Target
from ..sizes import parse_tmpfs_size, run_flag_size
from ..suppress import IGNORE_LABEL
from . import documents
from .documents import STDIN, Definition
from .mountpath import at_shm
from .workload import amd_gpus, idle, ml_signs, serving

SUFFIX = ".container"
POD_SUFFIX = ".pod"
TARGETS = ("target", "dst", "dest", "destination")  # a --mount's target, in Podman's spellings
LIST_KEYS = ("Tmpfs", "Volume", "Mount", "PodmanArgs")  # LookupAll: every value, an empty one clears
MAX_DROPINS = 64  # drop-in files read for one unit
# Podman's options of a tmpfs --mount (volumes.go: parseMountOptions), ro/readonly/rw aside
_TMPFS_OPTIONS = {
    "type", "target", "dst", "dest", "destination", "tmpfs-size", "tmpfs-mode", "tmpcopyup", "notmpcopyup", "nodev",
    "dev", "noexec", "exec", "nosuid", "suid", "noswap", "U", "chown", "relabel", "shared", "rshared", "private",
    "rprivate", "slave", "rslave", "unbindable", "runbindable", "Z", "z", "no-dereference", "idmap", "consistency",
}  # fmt: skip


def is_unit(text: str) -> bool:
    """An INI-style Quadlet .container unit (stdin has no file name to tell it): a [Container] section line."""
    return any(line.strip() == "[Container]" for line in text.splitlines()[:1000])


def _lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line): a backslash at the end continues a line, joined as Podman joins it (the
    backslash dropped, nothing added; a comment inside is skipped); in linear time, whatever the count."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    start = 0
    raw = text.splitlines()
    for number, line in enumerate(raw, 1):
        line = line.strip()
        if line[:1] in ("#", ";"):
            if parts:
                continue
        elif line.endswith("\\") and number != len(raw):
            start = start if parts else number
            parts.append(line[:-1])
            continue
        if parts:
            parts.append(line)
            line, parts = "".join(parts), []
        else:
            start = number
        out.append((start, line))
    return out


def parse(text: str, source: str, section: str = "Container") -> dict[str, list[tuple[int, str]]]:
    """The section's keys -> [(line, value)], repeated keys kept in order. UsageError with file:line for a line that
    is neither a section, a comment nor KEY=VALUE."""
    keys: dict[str, list[tuple[int, str]]] = {}
    current, found = None, False
    for start, line in _lines(text):
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


def dropins(source: str) -> list[str]:
    """The unit's drop-in files, in the order Quadlet merges them (cmd/quadlet: loadUnitDropins)."""
    if source == documents.STDIN or not os.path.isfile(source):
        return []
    folder, name = os.path.split(source)
    stem, ext = os.path.splitext(name)
    parts = stem.split("-")
    dirs = [name + ".d"] + ["-".join(parts[:i]) + "-" + ext + ".d" for i in range(len(parts) - 1, 0, -1)]
    dirs.append(ext[1:] + ".d")  # specific first: a .conf name is taken from the first directory that has it
    chosen: dict[str, str] = {}
    for d in dirs:
        path = os.path.join(folder, d)
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        for conf in names:
            if conf.endswith(".conf") and conf not in chosen:
                chosen[conf] = os.path.join(path, conf)
    if len(chosen) > MAX_DROPINS:
        raise UsageError(f"{source}: more than {MAX_DROPINS} drop-in .conf files")
    return [chosen[conf] for conf in sorted(chosen)]


class _Unit:
    """One unit's keys (with its drop-ins') and the `podman run` arguments Quadlet makes of them, in its order."""

    def __init__(
        self,
        keys: dict[str, list[tuple[int, str]]],
        source: str,
        more: list[tuple[str, dict[str, list[tuple[int, str]]]]] | None = None,
    ):
        self.source = source
        self.first_line = min((line for values in keys.values() for line, _ in values), default=1)
        self.values: dict[str, list[tuple[str, str]]] = {}  # key -> [(file:line, value)]
        for path, unit in [(source, keys), *(more or [])]:
            for key, values in unit.items():
                self.values.setdefault(key, []).extend((f"{path}:{line}", value) for line, value in values)
        self.args = self._argv()

    def all(self, key: str) -> list[tuple[str, str]]:
        """Every value of a list key since the last empty one (which clears), as Quadlet's LookupAll."""
        values = self.values.get(key, [])
        cut = max((i + 1 for i, (_, value) in enumerate(values) if not value), default=0)
        return values[cut:]

    def last(self, key: str) -> tuple[str, str] | None:
        """A single key's last value, its quotes taken off (Quadlet's Lookup); an empty one is none."""
        if not self.values.get(key):
            return None
        place, value = self.values[key][-1]
        value = value.rstrip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return (place, value) if value else None

    def _argv(self) -> list[tuple[str, str]]:
        """podman run's arguments as Quadlet writes them (quadlet.go): its keys' flags, then PodmanArgs last."""
        args = []
        for key, flag in (("ShmSize", "--shm-size"), ("Memory", "--memory")):
            found = self.last(key)
            if found:
                args.append((found[0], f"{flag}={found[1]}"))
        args += [(p, f"--tmpfs={v}") for p, v in self.all("Tmpfs")]
        args += [(p, f"--volume={v}") for p, v in self.all("Volume")]
        args += [(p, f"--mount={v}") for p, v in self.all("Mount")]
        for key, flag in (("Label", "--label="), ("PodmanArgs", "")):  # Label= holds key=value words, as systemd quotes
            for place, value in self.all(key):
                try:
                    args += [(place, flag + arg) for arg in shlex.split(value)]
                except ValueError as e:
                    raise UsageError(f"{place}: {key}: {e}") from None
        return args

    def label(self, name: str) -> tuple[str, str | None]:
        """A label's value as Podman gets it (Label=, then PodmanArgs' --label: the last one), and where it is."""
        found: tuple[str, str | None] = ("", None)
        for place, value in self._values("--label", "-l"):
            key, eq, text = value.partition("=")
            if eq and key == name:
                found = (place, text)
        return found

    def flag(self, *names: str) -> tuple[str, str] | None:
        """The last `--name=value` or `--name value` of any of its names: the one Podman takes."""
        found = self._values(*names)
        return found[-1] if found else None

    def _values(self, *names: str) -> list[tuple[str, str]]:
        out = []
        for i, (place, arg) in enumerate(self.args):
            name, eq, value = arg.partition("=")
            if name in names and eq:
                out.append((place, value))
            elif arg in names and i + 1 < len(self.args):
                out.append((place, self.args[i + 1][1]))
        return out

    def size(self, found: tuple[str, str] | None, what: str) -> int | None:
        """A size flag as Podman reads it (runargs' sizes: go-units' RAMInBytes); None where absent or 0."""
        if found is None:
            return None
        place, text = found
        try:
            return run_flag_size(text, what=what)
        except UsageError as e:
            raise UsageError(f"{place}: {e}") from None

    def mount(self, unreadable: list[str]) -> Shm | None:
        """A tmpfs, volume or mount at /dev/shm (Tmpfs=, Volume=, Mount= or their PodmanArgs flags), as Podman mounts
        it: one only (_one_at_shm)."""
        tmpfs = [(p, v) for p, v in self._values("--tmpfs") if at_shm(v.partition(":")[0])]
        volumes = [
            (p, v) for p, v in self._values("--volume", "-v") if len(v.split(":")) > 1 and at_shm(v.split(":")[1])
        ]
        mounts = [(p, v, fields) for p, v in self._values("--mount") if (fields := _at_shm(p, v)) is not None]
        _one_at_shm(tmpfs, volumes, mounts)
        if mounts:
            place, value, fields = mounts[0]
            return self._mount(place, value, fields, unreadable)
        if volumes:
            value = volumes[0][1]
            parts = value.split(":")
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
            if at_shm(parts[0]):
                unreadable.append(f"{SHM_SIZE_UNKNOWN} (Volume={value}: the host's, not in the unit)")
                return Shm.unmeasured(None, "host", f"Volume={value}: the host's /dev/shm", read_only)
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Volume={value}: the volume's, not in the unit)")
            return Shm.unmeasured(None, "unknown", f"Volume={value}", read_only)
        if tmpfs:
            value = tmpfs[0][1]
            opts = [o.strip() for o in value.partition(":")[2].split(",")]
            size = next((parse_tmpfs_size(o[5:]) for o in opts if o.startswith("size=")), None)
            if size is None:
                unreadable.append(f"{SHM_SIZE_UNKNOWN} (Tmpfs={value}: no size, the kernel's half of memory)")
            return Shm.unmeasured(size, "tmpfs", f"Tmpfs={value}", "ro" in opts)
        return None

    def _mount(self, place: str, value: str, fields: dict[str, str], unreadable: list[str]) -> Shm:
        """The --mount at /dev/shm (its options: _at_shm), read as Podman reads it."""
        tokens = next(csv.reader([value]), [])
        kind = fields.get("type", "volume")
        if kind not in ("tmpfs", "ramfs"):
            source = fields.get("source") or fields.get("src") or ""
            host = kind == "bind" and at_shm(source)
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Mount={value}: {'the host' if host else 'its source'}'s)")
            return Shm.unmeasured(None, "host" if host else "unknown", f"Mount={value}")
        read_only = False
        for token in tokens:
            name, has_value, text = token.partition("=")
            if name in ("ro", "readonly", "rw"):
                on = not has_value or text.lower() == "true"
                if has_value and text.lower() not in ("true", "false"):
                    continue  # Podman passes it by: neither
                read_only = on if name != "rw" else not on
            elif name not in _TMPFS_OPTIONS:
                raise UsageError(
                    f"{place}: Mount={value}: Podman refuses the option {name!r} for a tmpfs "
                    "(read-only is ro, readonly or rw=false)"
                )
        size = None
        if fields.get("tmpfs-size"):
            size = parse_tmpfs_size(fields["tmpfs-size"])
            if size is None:
                raise UsageError(f"{place}: Mount={value}: tmpfs-size: cannot read {fields['tmpfs-size']!r}")
        else:
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Mount={value}: no tmpfs-size, the kernel's half of memory)")
        return Shm.unmeasured(size, "tmpfs", f"Mount={value}", read_only)

    def podman_shm(self, unreadable: list[str]) -> Shm:
        """Podman's own /dev/shm, sized by the --shm-size it gets last (ShmSize=, then PodmanArgs)."""
        written = self.flag("--shm-size")
        if written is None:
            return Shm.unmeasured(PODMAN_DEFAULT_SHM, "podman-shm", "no ShmSize: Podman's default 64000k")
        said = f"ShmSize={written[1]}" if written == self.last("ShmSize") else f"PodmanArgs=--shm-size={written[1]}"
        size = self.size(written, "ShmSize")
        if size is None:  # Podman: 0 is no limit
            unreadable.append(f"{SHM_SIZE_UNKNOWN} ({said}: no limit, the kernel's half of memory)")
            return Shm.unmeasured(None, "podman-shm", f"{said}: no limit")
        return Shm.unmeasured(size, "podman-shm", said)

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
            shm = self.podman_shm(unreadable)
        memory = self.size(self.flag("--memory", "-m"), "--memory")
        devices = [v for _, v in self.all("AddDevice") + self._values("--device")]
        gpus = next((d.split("=", 1)[1] or "all" for d in devices if d.startswith("nvidia.com/gpu")), None)
        gpus = gpus or amd_gpus(devices, [p for _, v in self.all("Environment") for p in v.split()])
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
            server=serving((self.last("Image") or (0, ""))[1], None, exec_[1] if exec_ else ""),
            flags=idle((self.last("Image") or (0, ""))[1], exec_[1] if exec_ else ""),
        )

    def pod_shm(self, pod: tuple[str, str], unreadable: list[str]) -> Shm:
        """The /dev/shm of the pod `Pod=` names, from its .pod unit beside this one; unknown without it."""
        place, name = pod
        if not name.endswith(POD_SUFFIX) or os.sep in name:
            raise UsageError(f"{place}: Pod={name}: not the name of a Quadlet .pod unit (NAME.pod)")
        path = os.path.join(os.path.dirname(self.source), name)
        if self.source == STDIN or not os.path.isfile(path):
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Pod={name}: the pod's, and its unit is not beside this one)")
            return Shm.unmeasured(None, "podman-shm", f"Pod={name}: the pod's /dev/shm")
        unit = _Unit(parse(documents.text(path), path, "Pod"), path)
        if unit.flag("--ipc") or unit.flag("--share"):  # namespaces the pod shares otherwise: not told here
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (Pod={name}: its PodmanArgs change what the pod shares)")
            return Shm.unmeasured(None, "unknown", f"Pod={name}: PodmanArgs of {path}")
        shm = unit.podman_shm(unreadable)  # [Pod] ShmSize= or PodmanArgs=, the last on podman's line, as above
        return Shm.unmeasured(shm.size_bytes, "podman-shm", f"Pod={name}: the pod's /dev/shm ({path}: {shm.detail})")


def _at_shm(place: str, value: str) -> dict[str, str] | None:
    """A --mount's options (a CSV, as Podman reads it) when its target is /dev/shm, else None."""
    try:
        tokens = next(csv.reader([value]), [])
    except csv.Error as e:
        raise UsageError(f"{place}: Mount={value!r}: {e}") from None
    fields = dict(t.partition("=")[::2] for t in tokens)
    target = next((fields[k] for k in TARGETS if fields.get(k)), "")
    return fields if at_shm(target) else None


def _one_at_shm(tmpfs: list[tuple[str, str]], volumes: list[tuple[str, str]], mounts: list[tuple]) -> None:
    """Podman mounts one thing at a destination, and refuses the container otherwise (pkg/specgenutil/volumes.go:
    ErrDuplicateDest): two --mount; two --tmpfs or two --volume unless one repeated; a --volume beside a --mount
    unless the same bind; a --tmpfs beside a --volume, or beside a --mount that is not a tmpfs (beside a tmpfs
    --mount, the --mount is the one mounted)."""
    kinds = {fields.get("type", "volume") for _, _, fields in mounts}
    if (
        len(mounts) > 1
        or len({v for _, v in tmpfs}) > 1
        or len({v for _, v in volumes}) > 1
        or (volumes and mounts and not _same_bind(volumes[0][1], mounts[0][2]))
        or (tmpfs and volumes)
        or (tmpfs and mounts and kinds != {"tmpfs"})
    ):
        said = [f"Tmpfs={v}" for _, v in tmpfs] + [f"Volume={v}" for _, v in volumes]
        said += [f"Mount={v}" for _, v, _ in mounts]
        place = [*tmpfs, *volumes, *[(p, v) for p, v, _ in mounts]][-1][0]  # the last of them, as Quadlet writes them
        raise UsageError(
            f"{place}: {len(said)} mounts at {SHM} ({'; '.join(said)}): Podman refuses the container "
            "(duplicate mount destination)"
        )


def _same_bind(volume: str, fields: dict[str, str]) -> bool:
    """A Volume= and a bind Mount= of one host path, neither with options: the same mount to Podman."""
    source, _, rest = volume.partition(":")
    plain = set(fields) <= {"type", "source", "src", *TARGETS} and ":" not in rest
    return plain and fields.get("type") == "bind" and (fields.get("source") or fields.get("src")) == source


def probe(text: str, source: str) -> list[Definition]:
    """The container a .container unit starts (with its drop-ins), named as systemd names its service."""
    more = [(path, parse(documents.text(path), path)) for path in dropins(source)]
    unit = _Unit(parse(text, source), source, more)
    at, loader = unit.label(LOADER_LABEL)
    facts = unit.facts(os.path.basename(source)[: -len(SUFFIX)] or source)
    return [Definition(facts, loader, at, ignore_label=unit.label(IGNORE_LABEL)[1])]
