"""The exporter's engine inventory kept by the engine's events (EngineInventory._on), without an engine: each event
as the Engine API's /events writes it (Type, Action, Actor.ID, and the legacy status and id), each container as
tests/data/inspect captured it, answered by a stand-in for the engine's inspect. The real engine's events are
tests/integration/prometheus's."""

from __future__ import annotations

import copy
import json

import pytest

from shmdoctor.exporter.inventory import EngineInventory
from tests.helpers import DATA


def captured(name: str) -> dict:
    return json.loads((DATA / "inspect" / f"{name}.json").read_text())


class Engine:
    """Inspect answered from captures by full ID; host_shm None: a remote engine (pids not ours)."""

    host_shm = None
    runtime = "docker"

    def __init__(self, *infos: dict) -> None:
        self.by_id = {i["Id"]: i for i in infos}

    def inspect(self, ref: str) -> dict | None:
        return copy.deepcopy(self.by_id.get(ref))

    def map(self, fn, items):
        return [fn(i) for i in items]


def event(action: str, cid: str, legacy: bool = False) -> dict:
    if legacy:
        return {"status": action, "id": cid, "from": "busybox", "Type": "container"}
    return {"Type": "container", "Action": action, "Actor": {"ID": cid, "Attributes": {"name": "x"}}, "time": 1}


def names(inventory: EngineInventory) -> list[str]:
    entries, error = inventory.entries(0)
    assert error is None
    return [e.labels.container for e in entries]


@pytest.mark.parametrize("legacy", [False, True], ids=["actor", "legacy"])
def test_a_container_started_joins_and_one_destroyed_leaves(legacy):
    running = captured("default")
    engine, inventory = Engine(running), EngineInventory(timeout=1)
    inventory._on(engine, event("start", running["Id"], legacy))
    assert names(inventory) == ["sdt-audit-cap-default"]
    inventory._on(engine, event("destroy", running["Id"], legacy))
    assert names(inventory) == []


def test_events_of_no_change_are_ignored_and_exec_actions_read_by_their_name():
    running = captured("default")
    engine, inventory = Engine(running), EngineInventory(timeout=1)
    for action in ("exec_start: sh -c df", "health_status: healthy", "attach", "top", "resize"):
        inventory._on(engine, event(action, running["Id"]))
    assert inventory.entries(0)[1] is not None  # nothing published: still waiting for the first inventory
    inventory._on(engine, event("unpause", running["Id"]))
    assert names(inventory) == ["sdt-audit-cap-default"]
    inventory._on(engine, {"Type": "container", "Action": "start"})  # no ID: nothing to inspect
    assert names(inventory) == ["sdt-audit-cap-default"]


def test_a_container_that_died_is_dropped_once_inspect_says_it_is_not_running():
    info = captured("memory")
    engine, inventory = Engine(info), EngineInventory(timeout=1)
    inventory._on(engine, event("start", info["Id"]))
    engine.by_id[info["Id"]]["State"].update(Running=False, Pid=0, Status="exited")
    inventory._on(engine, event("die", info["Id"]))
    assert names(inventory) == []


def test_an_oom_kill_survived_is_flagged_on_its_container_until_it_is_gone():
    info = captured("memory")
    engine, inventory = Engine(info), EngineInventory(timeout=1)
    inventory._on(engine, event("start", info["Id"]))
    inventory._on(engine, event("oom", info["Id"]))  # a process of it killed, the container still running
    [entry] = inventory.entries(0)[0]
    assert "oom-killed" in entry.probed.facts.flags and entry.probed.pid is None  # a remote engine's pid is not ours
    inventory._on(engine, event("destroy", info["Id"]))
    assert names(inventory) == [] and inventory._oom == set()


def test_a_container_inspect_no_longer_finds_is_dropped():
    info = captured("default")
    engine, inventory = Engine(info), EngineInventory(timeout=1)
    inventory._on(engine, event("start", info["Id"]))
    del engine.by_id[info["Id"]]
    inventory._on(engine, event("kill", info["Id"]))
    assert names(inventory) == []
