"""The exporter's inventory without an engine: EngineInventory's thread (_run, called here in the test's own thread)
against a stand-in engine that lists and inspects the captured containers of tests/data/inspect and streams events
as the Engine API's /events writes them (JSON: strings made at run time), then ends or breaks; ProcInventory over a
scan that fails; a container's /dev/shm device under a /proc of files; which engine socket --source auto finds. The
real engine's events and /proc: tests/integration/prometheus."""

from __future__ import annotations

import copy
import json
import os
import re
import socket

from shmdoctor.errors import ProbeError
from shmdoctor.exporter import inventory as inv
from shmdoctor.exporter.inventory import EngineInventory, ProcInventory, device_of, engine_socket_missing
from shmdoctor.probe import docker, procfs
from tests.helpers import DATA, REPO

HOST_SHM = 8 * 2**30


def captured(name: str) -> dict:
    return json.loads((DATA / "inspect" / f"{name}.json").read_text())


def event(action: str, cid: str) -> dict:
    return json.loads(json.dumps({"Type": "container", "Action": action, "Actor": {"ID": cid}, "time": 1}))


class Stream:
    """The engine's event stream: the events, then its end, or `breaks` raised mid-read (the engine went away)."""

    def __init__(self, events: list[dict], breaks: Exception | None = None, then=None) -> None:
        self.events, self.breaks, self.then, self.closed = events, breaks, then, False

    def __iter__(self):
        for e in self.events:
            yield e
            if self.then:
                self.then()
        if self.breaks:
            raise self.breaks

    def close(self) -> None:
        self.closed = True


class Engine:
    """Lists `infos`, inspects any by ID, streams."""

    runtime = "docker"

    def __init__(self, infos: list[dict], stream: Stream, host_shm: int | None = HOST_SHM) -> None:
        self.by_id = {i["Id"]: i for i in infos}
        self.stream, self.host_shm, self.closed = stream, host_shm, False

    def list(self, filters, include_exited):
        return [(i, i[:12]) for i in self.by_id]  # each running when listed; one may have exited before its inspect

    def inspect(self, ref: str) -> dict | None:
        return copy.deepcopy(self.by_id.get(ref))

    def map(self, fn, items):
        return [fn(i) for i in items]

    def events(self, since: float) -> Stream:
        return self.stream

    def close(self) -> None:
        self.closed = True


def run(monkeypatch, *engines, proc: str = "/proc") -> tuple[EngineInventory, list[tuple[list[str], str | None]]]:
    """EngineInventory._run over the engines, one a connection; past the last, the engine cannot be reached and the
    inventory is stopped. What it published each time: (container names, error)."""
    inventory = EngineInventory(timeout=1, retry=0, proc=proc)
    queue, published = list(engines), []

    def connect(timeout: float) -> Engine:
        if queue:
            return queue.pop(0)
        inventory.stop()
        raise ProbeError("cannot connect to the Docker engine")

    def record(entries, error) -> None:
        published.append(([e.labels.container for e in entries], error))
        inv.Inventory._set(inventory, entries, error)

    monkeypatch.setattr(docker, "Engine", connect)
    monkeypatch.setattr(inventory, "_set", record)
    inventory._run()
    return inventory, published


def test_the_running_containers_then_each_event_then_the_end_of_the_stream_said(monkeypatch):
    default, memory, oom = captured("default"), captured("memory"), captured("oom")
    stream = Stream([event("start", memory["Id"])])
    engine = Engine([default, oom], stream)
    later = [memory]

    def started() -> None:  # the engine starts it before it says so
        engine.by_id.update({i["Id"]: i for i in later})

    stream.events.insert(0, event("create", memory["Id"]))
    stream.then = started
    inventory, published = run(monkeypatch, engine)
    gone = f"the Docker engine at {inventory.host} closed its event stream"
    assert published == [
        (["sdt-audit-cap-default"], None),  # listed: the running one, not one that exited before its inspect
        (["sdt-audit-cap-default", "sdt-audit-cap-memory"], None),  # started
        ([], gone),  # the stream ended: emptied, and why
        ([], "cannot connect to the Docker engine"),
    ]
    assert stream.closed and engine.closed


def test_a_local_engines_containers_keep_their_pid_and_labels_and_a_remote_ones_no_pid(monkeypatch, tmp_path):
    default = captured("default")
    pid = default["State"]["Pid"]
    (tmp_path / str(pid) / "root" / "dev" / "shm").mkdir(parents=True)
    device = os.stat(tmp_path / str(pid) / "root" / "dev" / "shm").st_dev
    entries = []

    def keep() -> None:
        entries.extend(inventory_of["it"].entries(0)[0])

    inventory_of: dict[str, EngineInventory] = {}
    local = Engine([default], Stream([event("rename", default["Id"])]))
    original = EngineInventory.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        inventory_of["it"] = self

    monkeypatch.setattr(EngineInventory, "__init__", init)
    local.stream.then = keep
    run(monkeypatch, local, proc=str(tmp_path))
    [entry] = entries
    assert (entry.probed.pid, entry.device) == (pid, device)
    assert (entry.labels.container_id, entry.labels.image) == (default["Id"], default["Config"]["Image"])
    entries.clear()
    remote = Engine([default], Stream([event("rename", default["Id"])]), host_shm=None)
    remote.stream.then = keep
    run(monkeypatch, remote, proc=str(tmp_path))
    [entry] = entries
    assert (entry.probed.pid, entry.device) == (None, None)  # a remote engine's pids are not this machine's


def test_a_stream_broken_mid_read_is_the_engine_gone_and_said_by_its_kind(monkeypatch):
    stream = Stream([], breaks=ConnectionResetError("reset"))
    engine = Engine([captured("default")], stream)
    inventory, published = run(monkeypatch, engine)
    assert published[1] == ([], f"the Docker engine at {inventory.host} went away: ConnectionResetError")
    assert stream.closed and engine.closed


def test_a_stop_between_two_events_ends_it_without_reading_the_next(monkeypatch):
    default, memory = captured("default"), captured("memory")
    stream = Stream([event("rename", default["Id"]), event("start", memory["Id"])])
    engine = Engine([default, memory], stream)
    inventory_of: dict[str, EngineInventory] = {}
    original = EngineInventory.__init__

    def init(self, *args, **kwargs) -> None:
        original(self, *args, **kwargs)
        inventory_of["it"] = self

    monkeypatch.setattr(EngineInventory, "__init__", init)
    stream.then = lambda: inventory_of["it"].stop()
    _, published = run(monkeypatch, engine)
    assert published == [(["sdt-audit-cap-default", "sdt-audit-cap-memory"], None)] * 2  # the listing, one event
    assert stream.closed and engine.closed


def test_an_oom_kill_flags_only_its_container_and_a_container_that_died_of_one_stays(monkeypatch):
    memory, oom = captured("memory"), captured("oom")  # oom: exited, State.OOMKilled
    engine = Engine([memory, oom], Stream([]))
    inventory = EngineInventory(timeout=1)
    for action in ("start", "kill"):  # a kill survived: still running, no OOM
        inventory._on(engine, event(action, memory["Id"]))
    [entry] = inventory.entries(0)[0]
    assert "oom-killed" not in entry.probed.facts.flags
    inventory._on(engine, event("oom", memory["Id"]))
    assert "oom-killed" in inventory.entries(0)[0][0].probed.facts.flags
    inventory._on(engine, event("oom", oom["Id"]))  # its inspect says OOMKilled too: flagged, once
    inventory._on(engine, event("die", oom["Id"]))
    died = {e.labels.container: e for e in inventory.entries(0)[0]}["sdt-audit-cap-oom"]
    assert "oom-killed" in died.probed.facts.flags  # not running, kept for its OOM kill
    inventory._on(engine, event("destroy", oom["Id"]))
    assert [e.labels.container for e in inventory.entries(0)[0]] == ["sdt-audit-cap-memory"]


def test_a_failed_scan_of_proc_is_said_and_the_thread_is_a_daemon(monkeypatch):
    inventory = ProcInventory(refresh=0, proc="/nonexistent-proc")
    assert inventory.thread.daemon  # it never keeps the process from exiting

    def scan(proc: str):
        inventory.stop()
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(procfs, "scan", scan)
    inventory._run()
    assert inventory.entries(0) == ([], "cannot scan /nonexistent-proc: Permission denied")


def test_procs_targets_are_labelled_with_their_container_id(monkeypatch):
    facts = docker.facts_from_inspect(captured("default")).facts
    found = [procfs.Found(facts, pid=7, device=42, origin="container")]  # type: ignore[arg-type]
    monkeypatch.setattr(procfs, "scan", lambda proc: found)
    [entry] = ProcInventory(refresh=1).scan()
    assert (entry.labels.container, entry.labels.container_id, entry.device) == (
        "sdt-audit-cap-default",
        captured("default")["Id"],
        42,
    )


def test_a_pids_dev_shm_device_is_read_through_its_root(tmp_path):
    (tmp_path / "7" / "root" / "dev" / "shm").mkdir(parents=True)
    assert device_of(7, str(tmp_path)) == os.stat(tmp_path / "7" / "root" / "dev" / "shm").st_dev
    assert device_of(8, str(tmp_path)) is None  # gone
    assert device_of(None, str(tmp_path)) is None  # a remote engine's container: no pid of ours


def test_auto_finds_an_engine_by_docker_host_or_a_socket_at_dockers_path(monkeypatch, tmp_path):
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    path = tmp_path / "docker.sock"
    assert engine_socket_missing(str(path))  # nothing there
    path.mkdir()  # a hostPath volume for a socket the node does not have
    assert engine_socket_missing(str(path))
    path.rmdir()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert not engine_socket_missing(str(path))
    monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.2:2375")
    assert not engine_socket_missing(str(tmp_path / "none"))


def test_the_engine_is_tried_again_as_often_as_the_manual_says():
    manual = (REPO / "docs" / "commands" / "exporter.md").read_text()
    stated = re.search(r"finds the engine again when it is back \(it tries every (\d+) s\)", manual)
    assert stated and float(stated.group(1)) == EngineInventory(timeout=1).retry
