"""explain --container's decisions without an engine: postmortem.explain_container against an engine stand-in that
answers captured inspects (tests/data/inspect, `docker inspect` of containers made by tests/integration) and a log
stream in Docker's own form (8-byte frames, or the raw bytes of a container with a terminal), read by the real
probe's unframing and tail. tests/integration/docker/test_explain.py runs the same against dockerd."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from shmdoctor import postmortem
from shmdoctor.errors import ProbeError, UsageError
from shmdoctor.probe import docker

INSPECTS = Path(__file__).parent.parent / "data" / "inspect"
BUS = b"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"
MiB = 2**20
BUS_ID = "torch-worker-bus-error"


def inspect(name: str) -> dict[str, Any]:
    return json.loads((INSPECTS / f"{name}.json").read_text())


def framed(payload: bytes, stream: int = 2) -> bytes:
    """Docker's multiplexed log form (docs.docker.com, Engine API "Attach to a container": stream, 0, 0, 0, a
    big-endian uint32 length, that many bytes), a frame per line as the engine writes them."""
    out = bytearray()
    for line in payload.splitlines(keepends=True):
        out += bytes([stream, 0, 0, 0]) + len(line).to_bytes(4, "big") + line
    return bytes(out)


class Engine:
    """What explain_container asks of docker.Engine, answered from captured inputs; it records what was asked."""

    host = "unix:///var/run/docker.sock"
    host_shm = 64 * MiB

    def __init__(self, containers: dict[str, Any], stream: bytes = b"", log_error: str = "") -> None:
        self.containers, self.stream, self.log_error = containers, stream, log_error
        self.inspected: list[str] = []
        self.tail_asked: tuple[str, int, int, bool] | None = None

    def inspect(self, name: str) -> Any:
        self.inspected.append(name)
        return self.containers.get(name)

    def logs_tail(self, cid: str, lines: int, max_bytes: int, *, tty: bool = False) -> bytes:
        self.tail_asked = (cid, lines, max_bytes, tty)
        if self.log_error:
            raise ProbeError(self.log_error)
        chunks = (self.stream[i : i + 65536] for i in range(0, len(self.stream), 65536))
        return docker.kept_tail(docker._unframed(iter(chunks), tty), max_bytes)


@pytest.fixture
def answering(monkeypatch: pytest.MonkeyPatch) -> Any:
    def use(stand_in: Engine) -> Engine:
        monkeypatch.setattr(docker, "with_engine", lambda timeout, work: work(stand_in))
        return stand_in

    return use


def test_a_failure_in_the_logs_last_8_mib_is_read_and_one_before_it_is_not(answering: Any) -> None:
    # docs/commands/explain.md: of the last --tail lines, at most the last 8 MiB is read
    mib = (b"step 1 loss 0.5 " + b"." * 1007 + b"\n") * 1024  # 1 MiB of 1,024-byte lines
    half = mib[: MiB // 2]
    info = inspect("default")
    near = answering(Engine({"trainer": info}, framed(BUS + mib * 7 + half)))  # 7.5 MiB after the failure
    assert [d.signature for d in postmortem.explain_container("trainer", 1_000_000).diagnoses] == [BUS_ID]
    assert near.tail_asked == (info["Id"], 1_000_000, 8 * MiB, False)
    answering(Engine({"trainer": info}, framed(BUS + mib * 8 + half)))  # 8.5 MiB after it
    assert postmortem.explain_container("trainer", 1_000_000).diagnoses == ()


def test_the_note_says_how_many_lines_were_read(answering: Any) -> None:
    answering(Engine({"trainer": inspect("default")}, framed(BUS)))
    notes = postmortem.explain_container("trainer", 321).report.notes
    assert notes[-1] == "read the last 321 lines of its log (lines are numbered within them)"


def test_a_container_with_a_terminal_is_read_raw_and_one_without_in_frames(answering: Any) -> None:
    # Engine API: with Config.Tty true the log is the terminal's raw bytes, else frames; only JSON true is a terminal
    line = BUS.decode().rstrip("\n")
    for tty, stream in ((True, BUS), (False, framed(BUS)), (None, framed(BUS)), (1, framed(BUS))):
        info = copy.deepcopy(inspect("default"))
        if tty is None:
            del info["Config"]["Tty"]
        else:
            info["Config"]["Tty"] = tty
        asked = answering(Engine({"trainer": info}, stream))
        found = postmortem.explain_container("trainer", 10).diagnoses
        assert [(d.line, d.excerpt) for d in found] == [(1, line)], tty
        assert asked.tail_asked is not None and asked.tail_asked[3] is (tty is True)


def test_no_such_container_is_a_usage_error_and_something_else_a_probe_error(answering: Any) -> None:
    asked = answering(Engine({"trainer": ["not", "an", "inspect"]}))
    with pytest.raises(UsageError, match=r"^no such container: gone$"):
        postmortem.explain_container("gone", 10)
    with pytest.raises(ProbeError, match=r"answered the inspect of trainer with something else$"):
        postmortem.explain_container("trainer", 10)
    assert asked.tail_asked is None


def test_a_joiner_is_judged_by_its_owners_dev_shm_and_no_other_container_is_asked(answering: Any) -> None:
    joiner, owner = inspect("joiner"), inspect("owner")
    owner_id = joiner["HostConfig"]["IpcMode"].removeprefix("container:")
    asked = answering(Engine({"joiner": joiner, owner_id: owner}, framed(BUS)))
    facts = postmortem.explain_container("joiner", 10).report.facts
    assert asked.inspected == ["joiner", owner_id]
    assert facts.shm is not None and facts.shm.size_bytes == owner["HostConfig"]["ShmSize"] == 256 * MiB
    alone = answering(Engine({"joiner": joiner}, framed(BUS)))  # the owner gone: the joiner's own inspect speaks
    assert postmortem.explain_container("joiner", 10).report.facts.shm != facts.shm
    assert alone.inspected == ["joiner", owner_id]
    private = answering(Engine({"trainer": inspect("default")}, framed(BUS)))
    postmortem.explain_container("trainer", 10)
    assert private.inspected == ["trainer"]


def test_the_engines_state_ends_it_exited_dead_or_oom_killed(answering: Any) -> None:
    for status, oom, code, said in (
        ("exited", True, 137, "container-oom-killed"),
        ("running", True, 0, "container-oom-killed"),
        ("exited", False, 137, None),
        ("dead", False, 135, None),
    ):
        info = copy.deepcopy(inspect("oom"))
        info["State"].update(Status=status, OOMKilled=oom, ExitCode=code)
        answering(Engine({"trainer": info}))
        explanation = postmortem.explain_container("trainer", 10)
        assert explanation.exit is not None and explanation.exit.code == code, status
        assert explanation.exit.oom_killed is oom
        if said:
            assert said in [d.signature for d in explanation.diagnoses]
    running = copy.deepcopy(inspect("oom"))
    running["State"].update(Status="running", OOMKilled=False, ExitCode=0)
    answering(Engine({"trainer": running}, framed(BUS)))
    assert postmortem.explain_container("trainer", 10).exit is None
    running["State"] = "garbled"
    answering(Engine({"trainer": running}, framed(BUS)))
    assert postmortem.explain_container("trainer", 10).exit is None


def test_a_log_that_cannot_be_read_is_judged_from_the_state_alone(answering: Any) -> None:
    info = copy.deepcopy(inspect("oom"))
    info["HostConfig"]["LogConfig"] = {"Type": "none", "Config": {}}
    answering(Engine({"trainer": info}, log_error="the engine failed reading the logs: 501"))
    explanation = postmortem.explain_container("trainer", 10)
    assert explanation.report.notes[-1] == (
        "its log could not be read (the engine gave none, log driver 'none'): judged from its State alone"
    )
    assert "container-oom-killed" in [d.signature for d in explanation.diagnoses]
    info["HostConfig"]["LogConfig"] = {"Type": "d" * 39 + "river", "Config": {}}  # 44 characters: cut to 40
    answering(Engine({"trainer": info}, log_error="x"))
    assert f"log driver '{'d' * 39}…')" in postmortem.explain_container("trainer", 10).report.notes[-1]
    info["HostConfig"]["LogConfig"] = {"Type": "d" * 40}  # 40: whole
    answering(Engine({"trainer": info}, log_error="x"))
    assert f"log driver '{'d' * 40}')" in postmortem.explain_container("trainer", 10).report.notes[-1]
    del info["HostConfig"]["LogConfig"]  # no driver said: the engine's own words
    answering(Engine({"trainer": info}, log_error="the engine failed reading the logs: 501"))
    assert postmortem.explain_container("trainer", 10).report.notes[-1] == (
        "its log could not be read (the engine failed reading the logs: 501): judged from its State alone"
    )


def test_nothing_read_and_a_state_without_failure_is_could_not_probe(answering: Any) -> None:
    info = copy.deepcopy(inspect("default"))
    info["HostConfig"]["LogConfig"] = {"Type": "none"}
    answering(Engine({"trainer": info}, log_error="x"))
    with pytest.raises(ProbeError, match=r"^container sdt-audit-cap-default: its log could not be read .*nothing"):
        postmortem.explain_container("trainer", 10)
    answering(Engine({"trainer": inspect("default")}, b""))  # read, and empty: judged, no failure
    assert postmortem.explain_container("trainer", 10).diagnoses == ()
