"""Facts about containers, read through the Docker engine without touching them.

Two halves: `facts_from_inspect` turns one container's inspect JSON into Facts (pure: tested on captured JSON), and
`Engine` does the I/O (the Docker SDK imported only here, one list round trip, inspects run concurrently).
Nothing here reads or keeps a container's environment: it holds secrets.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
import socket
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10: only in annotations, which are strings here

from ..errors import ProbeError, UsageError
from ..limits import ENGINE_TIMEOUT, MAX_BYTES, clip
from ..loader import LOADER_LABEL
from ..model import ENGINE_DEFAULT_SHM, SHM, SHM_SIZE_UNKNOWN, Facts, Flag, Ipc, IpcMode, Memory, Runtime, Shm, Target
from ..sizes import parse_tmpfs_size
from ..suppress import IGNORE_LABEL
from .deadline import concurrently, within
from .mountpath import at_shm, tmpfs_read_only
from .workload import amd_gpus, env_pairs, idle, ml_signs, nccl_env, serving

CONCURRENCY = 8  # inspects in flight: the engine answers them in parallel, the SDK's pool holds this many sockets

Inspect = dict[str, Any]
T = TypeVar("T")
_NAMED_IPC_MODES: tuple[IpcMode, ...] = ("host", "private", "shareable", "none")  # HostConfig.IpcMode as is


@dataclass(frozen=True)
class Probed:
    """What the engine told about one container: its Facts, its loader label, remarks for the report."""

    facts: Facts
    loader_label: str | None = None
    notes: tuple[str, ...] = ()
    image: str | None = None  # Config.Image: the image as the container was started from it
    pid: int | None = None  # State.Pid of a running container, as the engine host's PID namespace sees it
    ignore_label: str | None = None  # its shmdoctor.ignore label, as written


def name_of(info: Inspect) -> str:
    return (_str(info.get("Name")) or (_str(info.get("Id")) or "?")[:12]).lstrip("/")


# An engine's JSON is input like any other: each field is read as the type it should be, or as absent.


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> int | None:
    """A positive integer (bytes, nanoCPUs, a limit) up to MAX_BYTES; anything else is absent."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_BYTES
    return value if ok else None


def is_container(info: Any) -> TypeGuard[Inspect]:
    """An inspect (or a list entry) that names a container: a mapping with a string Id."""
    return isinstance(info, dict) and bool(_str(info.get("Id")))


# --- inspect JSON -> Facts (pure) -------------------------------------------------------------------------------


def _tmpfs_size(options: str) -> int | None:
    """'rw,size=512m,mode=1777' (HostConfig.Tmpfs) -> bytes; None without a size (the kernel's half of RAM)."""
    for option in options.split(","):
        key, _, value = option.partition("=")
        if key.strip() == "size":
            return parse_tmpfs_size(value.strip())  # None for '50%': relative to RAM, not known from here
    return None


def _mounted_shm(info: Inspect, host_shm: int | None) -> Shm | None:
    """A user's mount at /dev/shm, which the engine puts there whatever the IPC mode; None when there is none."""
    host = _dict(info.get("HostConfig"))
    tmpfs = next((_str(v) for k, v in _dict(host.get("Tmpfs")).items() if at_shm(k)), None)
    if tmpfs is not None:
        size = _tmpfs_size(tmpfs)
        unsized = "" if size else ": no size, the kernel's default of half the host's memory"
        read_only = tmpfs_read_only(tmpfs.split(","))
        return Shm.unmeasured(size, "tmpfs", f"HostConfig.Tmpfs[/dev/shm] = {tmpfs!r}{unsized}", read_only)
    for mount in map(_dict, _list(host.get("Mounts"))):
        if at_shm(mount.get("Target", "")) and mount.get("Type") == "tmpfs":
            size = _count(_dict(mount.get("TmpfsOptions")).get("SizeBytes"))
            detail = f"HostConfig.Mounts: tmpfs at /dev/shm, SizeBytes {size}"
            return Shm.unmeasured(size, "tmpfs", detail, mount.get("ReadOnly") is True)
    for mount in map(_dict, _list(info.get("Mounts"))):
        if at_shm(mount.get("Destination", "")):
            source = _str(mount.get("Source")) or _str(mount.get("Name")) or "?"
            read_only = mount.get("RW") is False
            if mount.get("Type") == "bind" and at_shm(source):
                known = "" if host_shm else ": its size is not known from a remote engine (--exec reads it)"
                return Shm.unmeasured(host_shm, "host", f"Mounts: bind of the host's /dev/shm{known}", read_only)
            detail = f"Mounts: a {_str(mount.get('Type'))} mount of {source} at /dev/shm"
            return Shm.unmeasured(None, "unknown", detail, read_only)
    return None


def shm_of(info: Inspect, owner: Inspect | None = None, host_shm: int | None = None) -> Shm:
    """Where the container's /dev/shm comes from and its size, from HostConfig (and the IPC owner's)."""
    mounted = _mounted_shm(info, host_shm)
    if mounted:
        return mounted
    host = _dict(info.get("HostConfig"))
    mode = _str(host.get("IpcMode")) or "private"
    if mode == "none":
        return Shm(
            present=False,
            size_bytes=None,
            used_bytes=None,
            free_bytes=None,
            source="none",
            detail="HostConfig.IpcMode = none",
        )
    if mode == "host":
        known = "" if host_shm else ": its size is not known from a remote engine (--exec reads it)"
        return Shm.unmeasured(host_shm, "host-ipc", f"HostConfig.IpcMode = host{known}")
    if mode.startswith("container:"):
        if owner is None:
            return Shm.unmeasured(
                None, "unknown", f"HostConfig.IpcMode = {mode}: that container could not be inspected"
            )
        inherited = shm_of(owner, None, host_shm)
        return replace(inherited, detail=f"the /dev/shm of {name_of(owner)} ({inherited.detail})")
    answered = host.get("ShmSize")
    size = _count(answered)
    if size:
        detail = f"HostConfig.ShmSize = {size}"
    elif answered in (None, 0) and not isinstance(answered, (bool, float)):  # 0: the daemon's default
        detail = "HostConfig.ShmSize unset"
    else:
        detail = f"HostConfig.ShmSize = {_said(answered)}, not a size: its /dev/shm is not known"
    return Shm.unmeasured(size, "docker-shm", detail)


def _said(value: Any) -> str:
    """A value the engine answered, as its JSON wrote it, at most about 40 characters: a number of 400 digits is
    said by its count of digits (counted from its bits: Python refuses to write an int of 4,300 digits)."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return ("-" if value < 0 else "") + "Infinity (1e400 or past it: more than a float holds)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 64:
        sign = "a negative" if value < 0 else "a"
        return f"{sign} number of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    if isinstance(value, str) and len(value) > 36:
        return json.dumps(value[:36])[:-1] + '..."'
    return json.dumps(value)


def ipc_of(info: Inspect, owner: Inspect | None = None) -> Ipc:
    mode = _str(_dict(info.get("HostConfig")).get("IpcMode")) or "private"
    if mode.startswith("container:"):
        return Ipc("container", owner=name_of(owner) if owner else mode.partition(":")[2][:12])
    return Ipc(next((m for m in _NAMED_IPC_MODES if m == mode), "unknown"))


def cpus_of(host: dict) -> float | None:
    if _count(host.get("NanoCpus")):
        return host["NanoCpus"] / 1e9
    if _count(host.get("CpuQuota")):
        return host["CpuQuota"] / (_count(host.get("CpuPeriod")) or 100_000)
    return None


def gpus_of(host: dict) -> str | None:
    """GPUs requested (--gpus): 'all', a count, or device ids; None when none."""
    for request in map(_dict, _list(host.get("DeviceRequests"))):
        if any("gpu" in _list(caps) for caps in _list(request.get("Capabilities"))):
            ids = [i for i in _list(request.get("DeviceIDs")) if isinstance(i, str)]
            if ids:
                return ",".join(ids)
            count = request.get("Count")
            return "all" if count == -1 else str(count) if _count(count) else "some"
    return None


def _nofile(host: dict) -> int | None:
    return next(
        (_count(u.get("Soft")) for u in map(_dict, _list(host.get("Ulimits"))) if u.get("Name") == "nofile"), None
    )


def declared_shm(
    probed: Probed, written: object, *, unresolved: bool, when: str, shown: Callable[[int], str], host: str
) -> tuple[Shm, tuple[str, ...]]:
    """The /dev/shm of a container a job file declares for the Docker driver (Nomad, Terraform), and what of it cannot
    be known: a size `written` as an expression (`unresolved`) is known `when` the tool runs; unset, the engine's
    default; host IPC or a bind of the host's /dev/shm, `host`'s, whose size the file does not hold."""
    shm, unreadable = probed.facts.shm, probed.facts.unreadable
    if unresolved:
        return replace(shm, size_bytes=None, detail=f"shm_size: {written}"), (
            f"{SHM_SIZE_UNKNOWN} (shm_size is {written}: known when {when})",
        )
    if shm.source == "docker-shm":
        size = shm.size_bytes
        detail = shown(size) if size else "no shm_size: the engine's default"
        return replace(shm, size_bytes=size or ENGINE_DEFAULT_SHM, detail=detail), ()  # the default is known
    if shm.source in ("host-ipc", "host"):
        how = "ipc_mode host" if shm.source == "host-ipc" else f"a bind of {host}'s {SHM}"
        return replace(shm, detail=f"{how} ({host}'s {SHM})"), (
            f"{SHM_SIZE_UNKNOWN} ({how} uses {host}'s {SHM}, whose size is not in the file)",
        )
    return shm, unreadable


def facts_from_inspect(
    info: Inspect, owner: Inspect | None = None, host_shm: int | None = None, runtime: Runtime = "docker"
) -> Probed:
    """One container's inspect JSON (and its IPC owner's) -> Facts; `runtime`: the engine's (docker, or podman
    serving Docker's API, whose shm mount is its own, 64000k by default). `host_shm`: the size of the engine host's
    /dev/shm when the engine runs where the audit runs."""
    host, state, config = _dict(info.get("HostConfig")), _dict(info.get("State")), _dict(info.get("Config"))
    shm = shm_of(info, owner, host_shm)
    if runtime == "podman" and shm.source == "docker-shm":
        shm = replace(shm, source="podman-shm")
    flags: set[Flag] = {"oom-killed"} if state.get("OOMKilled") is True else set()
    notes = []
    status = _str(state.get("Status"))
    if status == "exited":
        code = state.get("ExitCode")
        code = code if isinstance(code, int) and not isinstance(code, bool) else "?"
        notes.append(f"exited (exit code {code}) at {(_str(state.get('FinishedAt')) or '?')[:19]}Z")
    elif status not in (None, "running"):
        notes.append(f"not running: {status}")
    gpus = gpus_of(host) or amd_gpus(host.get("Devices"), config.get("Env"), host.get("Runtime"))
    if gpus:
        notes.append(
            f"GPUs requested: {gpus} (a DDP rank per GPU: give --ranks, or ranks= in the {LOADER_LABEL} label)"
        )
    facts = Facts(
        target=Target(kind="container", name=name_of(info), id=_str(info.get("Id"))),
        shm=shm,
        ipc=ipc_of(info, owner),
        memory=Memory(limit_bytes=_count(host.get("Memory")), used_bytes=None),
        runtime=runtime,
        ml_signs=ml_signs(config.get("Image"), config.get("Entrypoint"), config.get("Cmd")),
        server=serving(config.get("Image"), config.get("Entrypoint"), config.get("Cmd"), env=config.get("Env")),
        nofile=_nofile(host),
        cpus=cpus_of(host),
        gpus=gpus,
        nccl_env=nccl_env(env_pairs(config.get("Env"))),
        flags=frozenset(flags) | idle(config.get("Image"), config.get("Entrypoint"), config.get("Cmd")),
        unreadable=(f"{SHM_SIZE_UNKNOWN} ({shm.detail})",) if shm.present and shm.size_bytes is None else (),
    )
    label = _dict(config.get("Labels")).get(LOADER_LABEL)
    ignore = _dict(config.get("Labels")).get(IGNORE_LABEL)
    image, pid = config.get("Image"), state.get("Pid") if state.get("Running") is True else None
    return Probed(
        facts,
        label if label is None else str(label),
        tuple(notes),
        image if isinstance(image, str) else None,
        pid if isinstance(pid, int) and pid > 0 else None,
        ignore_label=None if ignore is None else str(ignore),
    )


def with_usage(probed: Probed, usage: tuple[int, int, int] | str, how: str = "with df inside (--exec)") -> Probed:
    """Facts completed by a reading of /dev/shm (`df` inside the container with --exec, statvfs from the host for the
    exporter): (size, used, free), or why it could not be read."""
    facts = probed.facts
    if isinstance(usage, str):
        return replace(probed, facts=replace(facts, unreadable=facts.unreadable + (f"/dev/shm use ({usage})",)))
    size, used, free = usage
    unreadable = tuple(u for u in facts.unreadable if not u.startswith(SHM_SIZE_UNKNOWN))  # df told it
    shm = replace(
        facts.shm,
        size_bytes=size,
        used_bytes=used,
        free_bytes=free,
        detail=f"{facts.shm.detail}; use read {how}",
    )
    return replace(probed, facts=replace(facts, shm=shm, unreadable=unreadable))


def gone(name: str, cid: str | None = None) -> Probed:
    """A container listed, then removed before it could be inspected: said, not judged."""
    return unread(name, cid, "removed while the audit ran (the engine answered 'No such container')")


def unread(name: str, cid: str | None, why: str) -> Probed:
    """A container whose inspect could not be read (gone, or an answer that is not an inspect): said, not judged."""
    facts = Facts(
        target=Target(kind="container", name=name, id=cid),
        shm=Shm(True, None, None, None, "unknown", f"not read: {why}"),
        ipc=Ipc("unknown"),
        memory=Memory(None, None),
        runtime="docker",
        unreadable=(f"container {name}: {why}",),
    )
    return Probed(facts)


def parse_df(output: str) -> tuple[int, int, int] | None:
    """`df -Pk /dev/shm` -> (size, used, free) in bytes; None when the output says otherwise."""
    for line in output.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 6 and fields[-1] == SHM and all(f.isdigit() for f in fields[1:4]):
            return int(fields[1]) * 1024, int(fields[2]) * 1024, int(fields[3]) * 1024
    return None


def parse_filters(specs: Iterable[str]) -> dict[str, list[str]]:
    """Docker's filters as the CLI takes them: 'label=team=vision', 'status=running' -> {"label": ["team=vision"]}."""
    filters: dict[str, list[str]] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip() or not value:
            raise UsageError(f"--filter {spec!r}: expected KEY=VALUE, e.g. label=team=vision or name=trainer")
        filters.setdefault(key.strip(), []).append(value)
    return filters


# --- the engine (I/O) -------------------------------------------------------------------------------------------


def _reason(error: BaseException) -> str:
    text = str(error)
    for needle, reason in (
        ("Permission denied", "permission denied on the socket (are you in the docker group?)"),
        ("No such file or directory", "no socket there"),
        ("Connection refused", "connection refused"),
        ("timed out", "timed out"),
        ("Name or service not known", "unknown host"),
    ):
        if needle in text:
            return reason
    return printable(text.splitlines()[0][:160]) if text else type(error).__name__


def _peer_pid(path: str) -> int:
    """The pid of the process serving a unix socket, as this pid namespace sees it (0: not visible from here)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        return struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[0]


def engine_host_shm(docker_host: str) -> int | None:
    """Size of the engine host's /dev/shm, when the engine runs where the audit runs: the daemon behind the unix
    socket is a process we can see, and we read its own /dev/shm (what --ipc=host and -v /dev/shm bind in)."""
    if not docker_host.startswith("unix://"):
        return None
    try:
        pid = _peer_pid(docker_host[len("unix://") :])
        if not pid:
            return None
        st = os.statvfs(f"/proc/{pid}/root{SHM}")
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def _one_pool_per_adapter(api: Any, base: type[Any]) -> None:
    """docker-py keys its unix-socket, named-pipe and ssh connection pools by the whole URL: each container's inspect
    would open a new connection. Key them by the adapter, so connections are reused. (Over ssh through the ssh
    client, `docker system dial-stdio` serves one request a session all the same: ControlMaster in ~/.ssh/config
    shares one connection among them.)"""
    for prefix, adapter in api.adapters.items():
        if isinstance(adapter, base):
            adapter.get_connection = lambda url, proxies=None, get=adapter.get_connection, key=prefix: get(key, proxies)


def address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def printable(text: str) -> str:
    """An engine address (or an error naming one) fit to print: a password in it masked, the whole cut short."""
    return clip(re.sub(r"(//[^/@:\s]*):[^/@\s]*@", r"\1:***@", text), 200)


class Engine:
    """The Docker engine named by DOCKER_HOST (or the local socket), through the Docker SDK (or engine_socket)."""

    api: Any  # the SDK's APIClient, or an engine_socket.SocketAPI
    _errors: Any  # the module of its exceptions: docker.errors, or engine_socket

    def __init__(self, timeout: float = ENGINE_TIMEOUT, reads_only: bool = False) -> None:
        """reads_only: only version, list and inspect are called (audit without --exec); on a unix socket they go
        through engine_socket, and the Docker SDK is not imported."""
        where = address()
        self.host = printable(where)  # what messages name
        if reads_only and where.startswith("unix://"):
            self._socket(where[len("unix://") :], timeout)
        else:
            self._sdk(where, timeout)
        self.host_shm = engine_host_shm(where)
        self.runtime = self._runtime()

    def _socket(self, path: str, timeout: float) -> None:
        from . import engine_socket

        self._errors = engine_socket
        try:
            self.api = engine_socket.SocketAPI(path, timeout, CONCURRENCY)
        except OSError as e:
            raise self._unreachable(e) from None

    def _sdk(self, where: str, timeout: float) -> None:
        try:
            import docker
            from docker.transport.basehttpadapter import BaseHTTPAdapter
        except ImportError:
            raise ProbeError("the Docker SDK for Python is not installed: pip install docker") from None
        self._errors = docker.errors
        try:  # the SDK's own version round trip: it also proves the engine answers
            # ssh:// through the system's ssh client, as the docker CLI does (~/.ssh/config applies; no paramiko)
            ssh = where.startswith("ssh://")
            # timeout: the stubs say int; the SDK hands it to requests, which takes seconds as a float
            api = docker.from_env(max_pool_size=CONCURRENCY, timeout=timeout, use_ssh_client=ssh)  # type: ignore[arg-type]
            self.api = api.api
        except docker.errors.DockerException as e:
            if "Invalid bind address" in str(e) or "protocol" in str(e).lower() and "not" in str(e).lower():
                raise UsageError(f"DOCKER_HOST={self.host!r} is not an engine address: {_reason(e)}") from None
            raise self._unreachable(e) from None
        if where.startswith("unix://"):  # no proxy applies to a socket: spare requests its per-call env lookups
            self.api.trust_env = False
        _one_pool_per_adapter(self.api, BaseHTTPAdapter)

    def _unreachable(self, error: BaseException) -> ProbeError:
        return ProbeError(
            f"cannot reach the Docker engine at {self.host}: {_reason(error)}; check DOCKER_HOST and that dockerd runs"
        )

    def _runtime(self) -> Runtime:
        """podman when the engine is Podman serving Docker's API (`podman system service`), else docker."""
        components = map(_dict, _list(_dict(self._call(self.api.version)).get("Components")))
        return "podman" if any("podman" in str(c.get("Name", "")).lower() for c in components) else "docker"

    def close(self) -> None:
        """Its connections (over ssh, the ssh processes)."""
        self.api.close()

    def _call(self, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        """An SDK call; NotFound passes through, a refused request (400) is bad input, anything else exit 3."""
        try:
            return fn(*args, **kwargs)
        except self._errors.NotFound:
            raise
        except self._errors.APIError as e:
            if e.status_code == 400:  # e.g. a filter the engine does not know: its own words
                raise UsageError(str(e.explanation)) from None
            raise ProbeError(f"the Docker engine at {self.host} failed: {_reason(e)}") from None
        except (self._errors.DockerException, OSError) as e:
            raise ProbeError(f"the Docker engine at {self.host} failed: {_reason(e)}") from None
        except (ValueError, RecursionError):  # its answer not JSON, or nested past Python's recursion limit
            raise ProbeError(f"the Docker engine at {self.host} answered with JSON shmdoctor cannot read") from None

    def list(self, filters: dict[str, list[str]], include_exited: bool) -> list[tuple[str, str]]:
        """One round trip: (id, name) of the containers to audit."""
        try:
            found = self._call(self.api.containers, all=include_exited, filters=filters or None)
        except UsageError as e:
            raise UsageError(f"--filter: {e}") from None
        if not isinstance(found, list) or not all(map(is_container, found)):
            raise ProbeError(f"the Docker engine at {self.host} answered the list of containers with something else")
        return [(c["Id"], (_str((_list(c.get("Names")) or [None])[0]) or c["Id"][:12]).lstrip("/")) for c in found]

    def inspect(self, ref: str) -> Inspect | None:
        """One container by name or id; None when there is no such container (any more). An answer that is not an
        inspect (`[{}]`, `{}`, `null`) comes back as it is: probe() says so for that container."""
        try:
            return self._call(self.api.inspect_container, ref)
        except self._errors.NotFound:
            return None

    def df_shm(self, cid: str) -> tuple[int, int, int] | str:
        """(size, used, free) of /dev/shm read inside the container with `df`, or why it could not be."""
        try:
            run = self._call(self.api.exec_create, cid, ["df", "-Pk", SHM], stdout=True, stderr=True)
            output = self._call(self.api.exec_start, _dict(run).get("Id"))
            output = output.decode(errors="replace") if isinstance(output, bytes) else ""
        except self._errors.NotFound:
            return "the container is gone"
        except (ProbeError, UsageError) as e:  # e.g. 409: it stopped since it was listed
            return str(e)
        return parse_df(output) or ("df inside: " + (output.strip().splitlines() or ["no output"])[-1][:120])

    def logs_tail(self, cid: str, lines: int, max_bytes: int, *, tty: bool = False) -> bytes:
        """The last `lines` lines of a container's stdout and stderr, at most max_bytes of them (read-only). Read
        LOG_READ bytes at a time and unframed here: the SDK reads a whole frame at once, as long as its header
        claims (up to 4 GiB from a hostile engine)."""
        params = {"stdout": 1, "stderr": 1, "timestamps": 0, "follow": 0, "tail": lines}
        api: Any = self.api  # its raw requests: not in the SDK's stubs
        res = self._call(api._get, api._url("/containers/{0}/logs", cid), params=params, stream=True)
        try:
            self._call(api._raise_for_status, res)
            return kept_tail(_unframed(iter(lambda: res.raw.read(LOG_READ), b""), tty), max_bytes)
        except (self._errors.DockerException, OSError, ValueError) as e:
            raise ProbeError(f"the Docker engine at {self.host} failed reading the logs: {_reason(e)}") from None
        finally:
            res.close()

    def events(self, since: float) -> Any:
        """The engine's container events from `since` on, as a stream of dicts (close() ends it); it never times out
        on its own: a quiet engine sends nothing for hours. Raises ProbeError when the engine cannot be asked."""
        return self._call(self.api.events, since=since, decode=True, filters={"type": "container"})

    def map(self, fn: Callable[[Any], T], items: builtins.list[Any]) -> builtins.list[T]:
        return concurrently(fn, items, CONCURRENCY)


LOG_READ = 64 * 2**10  # bytes of a container's log read at a time


def kept_tail(chunks: Iterable[bytes], max_bytes: int) -> bytes:
    """The last max_bytes of a stream read a chunk at a time (a failure's text is near its end), holding at most
    max_bytes and one chunk."""
    out = bytearray()
    for data in chunks:
        out += data
        if len(out) > max_bytes:
            del out[: len(out) - max_bytes]
    return bytes(out)


def _unframed(chunks: Iterator[bytes], tty: bool) -> Iterator[bytes]:
    """The payload of Docker's log stream: as it comes with a terminal, else in frames of an 8-byte header (stream,
    0, 0, 0, big-endian length) and that many bytes; cut where the chunks are cut, so nothing is held whole."""
    if tty:
        yield from chunks
        return
    header, left = b"", 0
    for chunk in chunks:
        while chunk:
            if left:
                yield chunk[:left]
                chunk, left = chunk[left:], left - min(left, len(chunk))
                continue
            take = 8 - len(header)
            header, chunk = header + chunk[:take], chunk[take:]
            if len(header) == 8:
                left, header = int.from_bytes(header[4:], "big"), b""


def probe(
    engine: Engine,
    names: list[str],
    filters: dict[str, list[str]],
    *,
    include_exited: bool = False,
    exec_df: bool = False,
) -> list[Probed]:
    """The containers named (any state; an unknown name is a UsageError), or those the engine lists (running ones,
    or all with include_exited; a container removed before its inspect is a `gone` entry). IPC owners that are not
    audited themselves are inspected too. With exec_df, /dev/shm use is read inside each running container."""
    if names:
        infos = engine.map(engine.inspect, names)
        unknown = [n for n, i in zip(names, infos) if i is None]
        if unknown:
            raise UsageError(f"no such container: {', '.join(unknown)}")
        listed = [(i["Id"], name_of(i)) if is_container(i) else (n, n) for n, i in zip(names, infos)]
    else:
        listed = engine.list(filters, include_exited)
        infos = engine.map(engine.inspect, [cid for cid, _ in listed])
    by_id = {i["Id"]: i for i in infos if is_container(i)}
    owners = {_owner_id(i) for i in by_id.values() if _owner_id(i)} - set(by_id)
    by_id.update({i["Id"]: i for i in engine.map(engine.inspect, sorted(owners)) if is_container(i)})

    def one(entry: tuple[tuple[str, str], Inspect | None]) -> Probed:
        (cid, name), info = entry
        if info is None:
            return gone(name, cid)
        if not is_container(info):
            return unread(
                name, cid, f"the engine's inspect answered {type(info).__name__} {str(info)[:40]}, not a container"
            )
        probed = facts_from_inspect(info, by_id.get(_owner_id(info)), engine.host_shm, engine.runtime)
        if exec_df and _dict(info.get("State")).get("Running") is True and probed.facts.shm.present:
            return with_usage(probed, engine.df_shm(cid))
        return probed

    if exec_df:  # execs wait on the engine: run them concurrently; the rest is quick arithmetic
        return engine.map(one, list(zip(listed, infos)))
    return [one(entry) for entry in zip(listed, infos)]


def _owner_id(info: Inspect) -> str:
    mode = _str(_dict(info.get("HostConfig")).get("IpcMode")) or ""
    return mode[len("container:") :] if mode.startswith("container:") else ""


def with_engine(timeout: float, work: Callable[[Engine], T], reads_only: bool = False) -> T:
    """work(engine) on a new Engine, the whole conversation (connecting included) within one deadline of `timeout`
    seconds: an engine that trickles its answers, or an ssh host that accepts and says nothing, is exit 3 once it
    passes, with every ssh process of it ended."""

    def run() -> T:
        engine = Engine(timeout, reads_only)
        try:
            return work(engine)
        finally:
            engine.close()

    return within(timeout, f"the Docker engine at {address()}", run, abort=_end_ssh_sessions)


def probe_within(
    timeout: float, names: list[str], filters: dict[str, list[str]], *, include_exited: bool, exec_df: bool
) -> list[Probed]:
    """probe() through a new Engine: listing, inspecting and exec-ing df within one deadline (with_engine)."""
    return with_engine(
        timeout,
        lambda engine: probe(engine, names, filters, include_exited=include_exited, exec_df=exec_df),
        reads_only=not exec_df,
    )


def _end_ssh_sessions() -> None:
    """The ssh clients the Docker SDK started for ssh:// (children of this process running `docker system
    dial-stdio` on the engine's host): a client waiting on a host that says nothing would outlive the audit."""
    import psutil

    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.cmdline()[-1:] == ["docker system dial-stdio"]:
                child.kill()
