"""`docker run` / `podman run` / `nerdctl run` arguments -> the Facts of the container they start, read as the engine
reads them (FACTS.md's table): a script's command line, a devcontainer's runArgs, a CI job's container options.

As the engine applies them: a mount at /dev/shm (`--tmpfs`, `--mount type=tmpfs|bind`, `-v SRC:/dev/shm`, or the
host's whole `/dev` bound over the container's, after which moby mounts nothing of its own under /dev) wins over the
IPC mode's; `--ipc=host` is the host's /dev/shm, `none` none, `container:X` X's; else the engine's own shm mount,
sized by the last `--shm-size` (Docker and nerdctl: 64 MiB without it, or with 0; Podman: 64000k, 0 no limit).
An argument that holds a variable or a command's output (`$SHM`, `$(nproc)`) is unknown: a flag's value then is not
known, and an unknown argument among the options may set any of them (said, never guessed).
"""

from __future__ import annotations

import csv
import posixpath
import re
from dataclasses import dataclass, field

from ..errors import UsageError
from ..loader import LOADER_LABEL
from ..model import (
    ENGINE_DEFAULT_SHM,
    PODMAN_DEFAULT_SHM,
    SHM,
    SHM_SIZE_UNKNOWN,
    Facts,
    Form,
    Ipc,
    Memory,
    Shm,
    ShmSource,
    Target,
)
from ..sizes import parse_tmpfs_size, run_flag_size
from ..suppress import IGNORE_LABEL
from .mountpath import at_shm, tmpfs_read_only
from .workload import amd_gpus, idle, ml_signs, nccl_env, serving

ENGINES = ("docker", "podman", "nerdctl", "nvidia-docker")
MAX_ARGS = 4096  # arguments of one run command
# Flags of `run` that take no value (docker/cli, Podman, nerdctl); every other flag takes one.
_BOOLEAN = {
    "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--rm", "--privileged", "--init", "-P", "--publish-all",
    "--read-only", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable", "--disable-content-trust", "-q",
    "--quiet", "--help", "--use-api-socket", "--replace", "--rmi", "--no-hosts", "--env-host", "--http-proxy",
    "--tls-verify", "--read-only-tmpfs", "--passwd",
}  # fmt: skip
_SHORT_BOOLEAN = "ditPq"
# A variable whose name says it holds the image, not options: `docker run --rm $IMAGE`
_IMAGE_NAME = re.compile(r"IMAGE|IMG|TAG|REPO|CONTAINER_NAME|^\$\{?\d", re.I)
_OPTIONS_NAME = re.compile(r"ARGS|OPTS|FLAGS|OPTIONS|PARAMS|MOUNTS|VOLUMES|GPU|ENV|EXTRA|DOCKER_RUN", re.I)


@dataclass(frozen=True)
class Arg:
    """One argument as the engine receives it; where `unknown`, as the file writes it (its value is not there)."""

    text: str
    start: int = -1  # its span in the file's text, for --fix (-1: not in a text that --fix edits)
    end: int = -1
    unknown: bool = False
    glued: bool = False  # the part of a flag's argument after its name (`--shm-size=8g`'s `8g`)


@dataclass
class RunArgs:
    """One run command's arguments, sorted as the engine reads them."""

    engine: str  # docker, podman, nerdctl
    at: Arg  # the `run` (or `create`) word: a new flag goes after it
    options: list[tuple[str, Arg, Arg | None]] = field(default_factory=list)  # (--name, the flag, its value)
    unknown: list[Arg] = field(default_factory=list)  # unknown arguments among the options
    image: Arg | None = None
    command: list[Arg] = field(default_factory=list)

    def values(self, *names: str) -> list[tuple[Arg, Arg | None]]:
        """(flag, value) of every use of any of these flags, in order (the engine takes a single flag's last)."""
        return [(flag, value) for name, flag, value in self.options if name in names]

    def last(self, *names: str) -> tuple[Arg, Arg | None] | None:
        found = self.values(*names)
        return found[-1] if found else None


def parse(args: list[Arg], engine: str, at: Arg, image: bool = True) -> RunArgs:
    """The arguments after `run`: options up to the image, then the container's command. `image`: the arguments
    carry it (a command line: UsageError where they do not, as the engine refuses it), or not (runArgs)."""
    if len(args) > MAX_ARGS:
        raise UsageError(f"{engine} run: more than {MAX_ARGS} arguments")
    out = RunArgs("docker" if engine == "nvidia-docker" else engine, at)
    if engine == "nvidia-docker":  # nvidia-docker's wrapper runs with the nvidia runtime and every GPU
        out.options.append(("--gpus", at, Arg("all")))
    i = 0
    while i < len(args):
        arg = args[i]
        text = arg.text
        if arg.unknown and not text.startswith("-"):
            name = text.lstrip("$\"'{(")
            if _IMAGE_NAME.search(name) or not _OPTIONS_NAME.search(name) and _image_follows(args, i):
                out.image, out.command = arg, args[i + 1 :]
                return out
            out.unknown.append(arg)
            i += 1
            continue
        if text == "--":
            i += 1
            continue
        if not text.startswith("-") or text == "-":
            out.image, out.command = arg, args[i + 1 :]
            return out
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if eq:
                out.options.append((name, arg, _part(arg, len(name) + 1)))
            elif name in _BOOLEAN:
                out.options.append((name, arg, None))
            else:
                out.options.append((name, arg, args[i + 1] if i + 1 < len(args) else None))
                i += 1
        else:  # -it, -e NAME=1, -eNAME=1, -m8g, -v a:b
            for k, letter in enumerate(text[1:], 1):
                if letter in _SHORT_BOOLEAN:
                    out.options.append((f"-{letter}", arg, None))
                    continue
                rest = text[k + 1 :].removeprefix("=")
                if rest:
                    out.options.append((f"-{letter}", arg, _part(arg, len(text) - len(rest))))
                else:
                    out.options.append((f"-{letter}", arg, args[i + 1] if i + 1 < len(args) else None))
                    i += 1
                break
        i += 1
    if image and out.image is None and not out.unknown:
        raise UsageError(
            f"{out.engine} {at.text} with no image: the engine refuses it ('requires at least 1 argument')"
        )
    return out


def _image_follows(args: list[Arg], i: int) -> bool:
    """An unknown argument of no telling name is the image when what follows is no flag (its command), or nothing."""
    return i + 1 == len(args) or not args[i + 1].text.startswith("-")


def _part(arg: Arg, offset: int) -> Arg:
    """The value glued to a flag (`--shm-size=8g`: `8g`), placed in the file where the flag is a plain word."""
    plain = arg.start >= 0 and arg.end - arg.start == len(arg.text)
    start = arg.start + offset if plain else -1
    return Arg(arg.text[offset:], start, arg.end if plain else -1, arg.unknown, glued=True)


def _written(flag: Arg, value: Arg | None) -> str:
    """The flag and its value as written: `--shm-size=8g`, `--shm-size 8g`, `-m8g` (a value glued on is a part of
    its flag's argument)."""
    if value is None or value.glued:
        return flag.text
    return f"{flag.text} {value.text}"


@dataclass(frozen=True)
class Read:
    """What a run command gives its container, with where the judged values come from."""

    facts: Facts
    loader_spec: str | None
    ignore_label: str | None = None  # its --label shmdoctor.ignore=..., as written


def facts(run: RunArgs, target: Target, *, assumed_image: str | None = None, form: Form | None = None) -> Read:
    """The Facts of the container `run` starts, named `target`. `assumed_image`: the image where the arguments do
    not carry it (a devcontainer's `image`, a CI job's); `form`: where its fix is written, if not a run command."""
    unreadable: list[str] = []
    podman = run.engine == "podman"
    mount = _mount_at_shm(run, unreadable)
    ipc_found = run.last("--ipc")
    ipc_text = ipc_found[1].text if ipc_found and ipc_found[1] is not None else "private"
    ipc_unknown = bool(ipc_found and (ipc_found[1] is None or ipc_found[1].unknown))
    pod = run.last("--pod") if podman else None
    mode, _, owner = ipc_text.partition(":")
    if ipc_unknown:
        ipc = Ipc("unknown")
    elif pod is not None:
        ipc = Ipc("container", owner=(pod[1] or pod[0]).text)
    elif mode in ("host", "private", "shareable", "none"):
        ipc = Ipc(mode)  # type: ignore[arg-type]
    elif mode == "container":
        ipc = Ipc("container", owner=owner)
    else:
        raise UsageError(
            f"{run.engine} run --ipc {ipc_text!r}: not an IPC mode (host, private, shareable, none, container:NAME)"
        )
    if mount is not None:
        shm = mount
    elif ipc_unknown:
        unreadable.append(f"{SHM_SIZE_UNKNOWN} (--ipc {_value(ipc_found)}: set from a variable the file does not give)")
        shm = Shm.unmeasured(None, "unknown", f"--ipc {_value(ipc_found)}")
    elif pod is not None:
        unreadable.append(f"{SHM_SIZE_UNKNOWN} (--pod {ipc.owner}: the pod's /dev/shm, sized where the pod is made)")
        shm = Shm.unmeasured(None, "podman-shm", f"--pod {ipc.owner}: the pod's /dev/shm")
    elif ipc.mode == "host":
        unreadable.append(f"{SHM_SIZE_UNKNOWN} (--ipc=host uses the host's {SHM}, whose size a file does not tell)")
        shm = Shm.unmeasured(None, "host-ipc", "--ipc=host (the host's /dev/shm; --shm-size is ignored)")
    elif ipc.mode == "none":
        shm = Shm(False, None, None, None, "none", "--ipc=none")
    elif ipc.mode == "container":
        unreadable.append(f"{SHM_SIZE_UNKNOWN} (--ipc={ipc_text}: that container's, started elsewhere)")
        shm = Shm.unmeasured(None, "unknown", f"--ipc={ipc_text}")
    else:
        shm = _engine_shm(run, podman, unreadable)
    for arg in run.unknown:
        unreadable.append(f"{SHM_SIZE_UNKNOWN} ({arg.text} among the options may set --shm-size, --ipc or a mount)")
    image = run.image.text if run.image is not None and not run.image.unknown else assumed_image
    entrypoint = _value(run.last("--entrypoint")) or None
    command = [a.text for a in run.command]
    env = _env(run)
    memory = _size(run.last("--memory", "-m"), "--memory", unreadable)
    gpus = _gpus(run) or amd_gpus(
        [_value((f, v)) for f, v in run.values("--device")], env, _value(run.last("--runtime")) or None
    )
    return Read(
        Facts(
            target=target,
            shm=shm,
            ipc=ipc,
            memory=Memory(memory, None),
            runtime="podman" if podman else "docker",
            gpus=gpus,
            ml_signs=ml_signs(image, entrypoint, command),
            server=serving(image, entrypoint, command, env=env),
            nccl_env=nccl_env(env),
            flags=idle(image, entrypoint, command),
            unreadable=tuple(dict.fromkeys(unreadable)),
            form=form,
        ),
        _label(run, LOADER_LABEL),
        _label(run, IGNORE_LABEL),
    )


def _value(found: tuple[Arg, Arg | None] | None) -> str:
    return found[1].text if found and found[1] is not None else ""


def _engine_shm(run: RunArgs, podman: bool, unreadable: list[str]) -> Shm:
    source: ShmSource = "podman-shm" if podman else "docker-shm"
    default = PODMAN_DEFAULT_SHM if podman else ENGINE_DEFAULT_SHM
    found = run.last("--shm-size")
    if found is None or found[1] is None:
        said = "Podman's default 64000k" if podman else "the engine's default"
        return Shm.unmeasured(default, source, f"no --shm-size: {said}")
    written = _written(*found)
    value = found[1]
    if value.unknown:
        unreadable.append(f"{SHM_SIZE_UNKNOWN} ({written}: set from a variable the file does not give)")
        return Shm.unmeasured(None, source, written)
    size = run_flag_size(value.text, what="--shm-size")
    if size is None:
        if podman:
            unreadable.append(f"{SHM_SIZE_UNKNOWN} ({written}: no limit, the kernel's half of memory)")
            return Shm.unmeasured(None, source, f"{written}: no limit")
        return Shm.unmeasured(default, source, f"{written}: the engine's default")
    return Shm.unmeasured(size, source, written)


def _size(found: tuple[Arg, Arg | None] | None, what: str, unreadable: list[str]) -> int | None:
    if found is None or found[1] is None:
        return None
    if found[1].unknown:
        unreadable.append(f"the memory limit ({_written(*found)}: set from a variable the file does not give)")
        return None
    return run_flag_size(found[1].text, what=what)  # 0: no limit


def _mount_at_shm(run: RunArgs, unreadable: list[str]) -> Shm | None:
    """The last mount at /dev/shm (or over /dev), as the engine mounts it."""
    found: Shm | None = None
    for name, flag, value in run.options:
        if value is None or name not in ("--tmpfs", "--mount", "-v", "--volume"):
            continue
        said = _written(flag, value)
        if value.unknown:
            continue  # an unknown mount: said with the unknown options below only where it is no flag's value
        if name == "--tmpfs":
            path, _, options = value.text.partition(":")
            if at_shm(path):
                opts = [o.strip() for o in options.split(",")]
                size = next((parse_tmpfs_size(o[5:]) for o in opts if o.startswith("size=")), None)
                found = Shm.unmeasured(size, "tmpfs", said, tmpfs_read_only(opts))
                if size is None:
                    unreadable.append(f"{SHM_SIZE_UNKNOWN} ({said}: no size, the kernel's half of memory)")
        elif name == "--mount":
            fields = _mount_fields(value.text)
            target = next((fields[k] for k in ("target", "destination", "dst") if fields.get(k)), "")
            kind, source = fields.get("type", "volume"), fields.get("source") or fields.get("src") or ""
            read_only = any(fields.get(k, "x") in ("", "true", "1") for k in ("readonly", "ro"))
            found = _at(target, kind, source, said, read_only, fields.get("tmpfs-size"), unreadable) or found
        else:
            parts = value.text.split(":")
            if len(parts) < 2:
                continue
            kind = "bind" if parts[0].startswith(("/", ".", "~")) else "volume"
            read_only = len(parts) > 2 and "ro" in parts[2].split(",")
            found = _at(parts[1], kind, parts[0], said, read_only, None, unreadable) or found
    return found


def _at(
    target: str, kind: str, source: str, said: str, read_only: bool, tmpfs_size: str | None, unreadable: list[str]
) -> Shm | None:
    """A mount of `kind` at `target`, if it gives the container its /dev/shm."""
    target, source = posixpath.normpath(target or "."), posixpath.normpath(source or ".")
    if kind == "bind" and target == source == "/dev":  # moby's own /dev mounts dropped: the host's /dev/shm shows
        unreadable.append(
            f"{SHM_SIZE_UNKNOWN} ({said}: the host's /dev, and so its {SHM}, whose size a file does not tell)"
        )
        return Shm.unmeasured(
            None, "host", f"{said}: the host's /dev/shm (the engine mounts none of its own under /dev)"
        )
    if not at_shm(target):
        return None
    if kind == "tmpfs":
        size = parse_tmpfs_size(tmpfs_size) if tmpfs_size else None
        if size is None:
            unreadable.append(f"{SHM_SIZE_UNKNOWN} ({said}: no tmpfs-size, the kernel's half of memory)")
        return Shm.unmeasured(size, "tmpfs", said, read_only)
    if kind == "bind" and at_shm(source):
        unreadable.append(f"{SHM_SIZE_UNKNOWN} ({said}: the host's {SHM}, whose size a file does not tell)")
        return Shm.unmeasured(None, "host", f"{said}: the host's /dev/shm bound in", read_only)
    unreadable.append(f"{SHM_SIZE_UNKNOWN} ({said}: its size is the volume's, which a file does not tell)")
    return Shm.unmeasured(None, "unknown", said, read_only)


def _mount_fields(text: str) -> dict[str, str]:
    try:
        tokens = next(csv.reader([text]), [])
    except csv.Error:
        return {}
    return {k.strip().lower(): v.strip() for k, _, v in (t.partition("=") for t in tokens)}


def _env(run: RunArgs) -> list[tuple[object, object]]:
    """-e NAME=value pairs as written (a bare -e NAME is this shell's value: not known)."""
    out: list[tuple[object, object]] = []
    for _, value in run.values("-e", "--env"):
        if value is not None and not value.unknown and "=" in value.text:
            name, _, text = value.text.partition("=")
            out.append((name, text))
    return out


def _gpus(run: RunArgs) -> str | None:
    """--gpus as Facts.gpus says it: 'all', a count or device ids ('some' where a variable gives it); or the nvidia
    runtime's NVIDIA_VISIBLE_DEVICES; or a CDI device nvidia.com/gpu=..."""
    found = run.last("--gpus")
    if found is not None and found[1] is not None:
        text = found[1].text.strip()  # '"device=0,1"': one CSV field, as docker reads it
        if found[1].unknown:
            return "some"
        fields = dict(f.partition("=")[::2] for f in next(csv.reader([text]), [])) if "=" in text else {}
        if fields:
            ids, count = fields.get("device", ""), fields.get("count", "")
            return ids or (count if count != "all" else "all") or "all"
        return text.strip('"') or None
    for _, value in run.values("--device"):
        if value is not None and value.text.startswith("nvidia.com/gpu="):
            return value.text.split("=", 1)[1] or "all"
    if _value(run.last("--runtime")) == "nvidia":
        visible = next((str(v) for k, v in _env(run) if k == "NVIDIA_VISIBLE_DEVICES"), "all")
        return None if visible in ("", "none", "void") else visible
    return None


def _label(run: RunArgs, name: str) -> str | None:
    """The value of its last `--label NAME=...` (as the engine keeps the last of a key)."""
    found = None
    for _, value in run.values("-l", "--label"):
        if value is not None and not value.unknown:
            key, _, spec = value.text.partition("=")
            if key.strip() == name:
                found = spec.strip()
    return found
