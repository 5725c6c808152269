"""What the exporter knows of its targets between scrapes, kept current in a thread of its own.

A scrape never talks to the engine: it reads the inventory (waiting for the first one at most its timeout), then
/dev/shm use fresh from /proc. The engine's containers are listed and inspected once, then kept current from its
event stream (a container started, renamed, stopped, OOM-killed); when the stream ends (the engine went away) the
inventory is emptied and says why, and the thread tries again. Without an engine, /proc is scanned again every
`refresh` seconds.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, replace
from typing import TypeVar

from ..errors import ProbeError, ShmDoctorError, UsageError
from ..model import SHM
from ..probe import docker, procfs
from .model import Labels

InventoryT = TypeVar("InventoryT", bound="Inventory")

HOST_NAME = ""  # the host's own /dev/shm: container="" (no container)
CHANGES = {"start", "restart", "rename", "update", "pause", "unpause"}  # re-inspect the container
ENDS = {"die", "stop", "kill", "destroy"}  # forget it when it no longer runs (a kill may be survived: re-inspected)


@dataclass(frozen=True)
class Entry:
    """One target as last inspected or scanned: its facts (use read at each scrape), labels, how to reach it."""

    probed: docker.Probed
    labels: Labels
    device: int | None  # st_dev of its /dev/shm when inspected: a pid reused by another process reads another one


def device_of(pid: int | None, proc: str = "/proc") -> int | None:
    if pid is None:
        return None
    try:
        return os.stat(f"{proc}/{pid}/root{SHM}").st_dev
    except OSError:
        return None


def host_entry(proc: str = "/proc") -> Entry:
    found = procfs.host(proc)
    facts = found.facts
    labels = Labels(HOST_NAME, "", "", facts.ipc.mode, facts.shm.source)
    return Entry(docker.Probed(facts, pid=found.pid), labels, found.device)


class Inventory:
    """The targets, behind a lock; `entries` waits for the first complete one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Entry] = []
        self._error: str | None = None
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"shmdoctor-{type(self).__name__}", daemon=True)

    def start(self: InventoryT) -> InventoryT:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()

    def entries(self, wait: float) -> tuple[list[Entry], str | None]:
        """The targets and, when they are not all known, why; waits at most `wait` seconds for the first inventory."""
        if not self._ready.wait(wait):
            return [], self.not_ready(wait)
        with self._lock:
            return list(self._entries), self._error

    def _set(self, entries: list[Entry], error: str | None) -> None:
        with self._lock:
            self._entries, self._error = entries, error
        self._ready.set()

    def not_ready(self, wait: float) -> str:
        raise NotImplementedError

    def _run(self) -> None:
        raise NotImplementedError


class ProcInventory(Inventory):
    """Every distinct /dev/shm of the machine, from /proc alone (no engine: containerd and CRI-O nodes)."""

    def __init__(self, refresh: float, proc: str = "/proc") -> None:
        super().__init__()
        self.refresh, self.proc = refresh, proc

    def not_ready(self, wait: float) -> str:
        return f"the first scan of {self.proc} took longer than {wait:g} s"

    def scan(self) -> list[Entry]:
        entries = []
        for found in procfs.scan(self.proc):
            facts = found.facts
            name = HOST_NAME if found.origin is None else facts.target.name
            labels = Labels(name, facts.target.id or "", "", facts.ipc.mode, facts.shm.source)
            entries.append(Entry(docker.Probed(facts, pid=found.pid), labels, found.device))
        return entries

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._set(self.scan(), None)
            except OSError as e:
                self._set([], f"cannot scan {self.proc}: {e.strerror}")
            self._stopped.wait(self.refresh)


class EngineInventory(Inventory):
    """The running containers of the engine named by DOCKER_HOST, from one inspect each, then its event stream."""

    def __init__(self, timeout: float, retry: float = 5.0, proc: str = "/proc") -> None:
        super().__init__()
        self.timeout, self.retry, self.proc = timeout, retry, proc
        self.host = docker.printable(docker.address())
        self._by_id: dict[str, Entry] = {}
        self._oom: set[str] = set()  # containers the engine reported an OOM kill in, while they run
        self._local = False

    def not_ready(self, wait: float) -> str:
        return f"the Docker engine at {self.host} has not answered within {wait:g} s"

    def _entry(self, probed: docker.Probed) -> Entry:
        facts = probed.facts
        if facts.target.id in self._oom:
            probed = replace(probed, facts=replace(facts, flags=facts.flags | {"oom-killed"}))
        pid = probed.pid if self._local else None  # a remote engine's pids are not ours
        labels = Labels(facts.target.name, facts.target.id or "", probed.image or "", facts.ipc.mode, facts.shm.source)
        return Entry(replace(probed, pid=pid), labels, device_of(pid, self.proc))

    def _publish(self) -> None:
        self._set(sorted(self._by_id.values(), key=lambda e: e.labels.container), None)

    def _inspect(self, engine: docker.Engine, cid: str) -> None:
        try:
            probed = docker.probe(engine, [cid], {})[0]
        except UsageError:  # no such container any more
            probed = None
        if probed is None:
            self._by_id.pop(cid, None)
        elif probed.pid is None and not probed.facts.flags & {"oom-killed"}:  # not running
            self._by_id.pop(cid, None)
            self._oom.discard(cid)
        else:
            self._by_id[cid] = self._entry(probed)

    def _on(self, engine: docker.Engine, event: dict) -> None:
        action = (event.get("Action") or event.get("status") or "").split(":")[0]
        cid = event.get("id") or (event.get("Actor") or {}).get("ID")
        if not cid:
            return
        if action == "oom":
            self._oom.add(cid)
        if action == "destroy":
            self._by_id.pop(cid, None)
            self._oom.discard(cid)
        elif action in CHANGES or action in ENDS or action == "oom":
            self._inspect(engine, cid)
        else:
            return
        self._publish()

    def _run(self) -> None:
        while not self._stopped.is_set():
            engine = stream = None
            try:
                engine = docker.Engine(timeout=self.timeout)
                self._local = engine.host_shm is not None
                stream = engine.events(since=int(time.time()))  # opened before the list: no change falls between
                self._by_id = {
                    p.facts.target.id: self._entry(p)
                    for p in docker.probe(engine, [], {})
                    if p.pid and p.facts.target.id
                }
                self._publish()
                for event in stream:
                    if self._stopped.is_set():
                        return
                    self._on(engine, event)
                raise ProbeError(f"the Docker engine at {self.host} closed its event stream")
            except ShmDoctorError as e:
                error = str(e)
            except Exception as e:  # the stream broken mid-read (urllib3, requests): the engine went away
                error = f"the Docker engine at {self.host} went away: {type(e).__name__}"
            finally:
                if stream is not None:
                    stream.close()
                if engine is not None:
                    engine.close()
            self._by_id = {}
            self._set([], error)
            self._stopped.wait(self.retry)


def engine_socket_missing(path: str = "/var/run/docker.sock") -> bool:
    """--source auto: no DOCKER_HOST and no socket at Docker's default path (a containerd or CRI-O node; a hostPath
    volume for a socket the node does not have is an empty directory)."""
    if os.environ.get("DOCKER_HOST"):
        return False
    try:
        return not stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return True
