"""explain's probes and judgement in one call: a log (file or stdin) weighed against the facts here, or a container's
log tail and State weighed against its inspect, from the engine (read-only)."""

from __future__ import annotations

from .diagnose import BY_ID, Exit, Explanation, judge
from .diagnose.place import elsewhere
from .errors import ProbeError, UsageError
from .limits import ENGINE_TIMEOUT, clip
from .model import Form, Requirement
from .probe import local, logs

CONTAINER_TAIL_BYTES = 8 * 2**20  # of a container's log: the end, where a failure is


def explain_log(
    path: str,
    need: Requirement | None = None,
    gpus: int | None = None,
    timeout: float | None = None,
    *,
    here: bool = False,
    shm_bytes: int | None = None,
    form: Form | None = None,
) -> Explanation:
    """The log (FILE, or stdin for '-') judged; read to its end, or within timeout seconds (past them, ProbeError).
    Judged against this machine's facts only where the log is said to come from here; else against the place the
    user states (shm_bytes, form) or the text says, or an unknown one."""
    source = "stdin" if path == "-" else path
    try:
        with logs.open_log(path, timeout) as f:
            what = logs.not_text(f)
            if what:
                raise UsageError(f"{source}: the log is {what}")
            scanner = logs.scan(logs.readable(f))
    except TimeoutError:
        raise ProbeError(f"{source}: the log did not end within --timeout {timeout:g} s") from None
    except OSError as e:  # a file that opens but does not read: /proc/self/mem (EIO), /proc/self/clear_refs (EINVAL)
        raise UsageError(f"{source}: cannot read: {e.strerror or e}") from None
    clues = scanner.clues  # shmdoctor run's line in the log says how the command ended
    ended = Exit(clues.exit_code, seen_by=clues.exit_from) if clues.exit_code is not None else None
    if here:
        facts = local.probe()
        note = "facts are of this machine or container (--here): the log is said to come from here"
        return judge(
            scanner.diagnoses(), facts, ended=ended, need=need, notes=(note,), source=source, clues=clues, gpus=gpus
        )
    where, found = elsewhere(clues, shm_bytes, form), scanner.diagnoses()
    weighed = where.known == "unknown" and any(BY_ID[d.signature].ambiguous for d in found)  # the place would tell
    notes = (UNKNOWN_NOTE,) if weighed else ()
    return judge(found, where, ended=ended, need=need, notes=notes, source=source, clues=clues, gpus=gpus)


UNKNOWN_NOTE = (
    "where it ran is not known: --shm-size SIZE and --where FORM state it, --here judges it against this machine "
    "(a job's own output piped in), --container NAME against a container"
)


def explain_container(
    name: str, tail: int, need: Requirement | None = None, timeout: float = ENGINE_TIMEOUT, gpus: int | None = None
) -> Explanation:
    from .diagnose.scan import scan_text
    from .probe import docker

    def read(engine: docker.Engine) -> tuple[docker.Inspect, docker.Probed, bytes, str]:
        info = engine.inspect(name)
        if info is None:
            raise UsageError(f"no such container: {name}")
        if not docker.is_container(info):
            raise ProbeError(f"the Docker engine at {engine.host} answered the inspect of {name} with something else")
        owner = None
        host = info.get("HostConfig")
        mode = host.get("IpcMode") if isinstance(host, dict) else None
        if isinstance(mode, str) and mode.startswith("container:"):
            owner = engine.inspect(mode[len("container:") :])
        probed = docker.facts_from_inspect(info, owner if docker.is_container(owner) else None, engine.host_shm)
        config = info.get("Config")
        tty = isinstance(config, dict) and config.get("Tty") is True
        try:
            return info, probed, engine.logs_tail(info["Id"], tail, CONTAINER_TAIL_BYTES, tty=tty), ""
        except ProbeError as e:  # a log driver that keeps nothing (none, syslog): its State still speaks
            log = host.get("LogConfig") if isinstance(host, dict) else None
            driver = log.get("Type") if isinstance(log, dict) else None
            why = f"the engine gave none, log driver {clip(str(driver), 40)!r}" if driver else str(e)
            return info, probed, b"", f"its log could not be read ({why})"

    info, probed, text, unread = docker.with_engine(timeout, read)  # all of it within one deadline
    state = info.get("State")
    state = state if isinstance(state, dict) else {}
    ended = None
    if state.get("Status") in ("exited", "dead") or state.get("OOMKilled"):
        ended = Exit(state.get("ExitCode"), bool(state.get("OOMKilled")), seen_by="the engine (State.ExitCode)")
    scanner = scan_text(text)
    read_note = f"{unread}: judged from its State alone" if unread else ""
    notes = probed.notes + (read_note or f"read the last {tail} lines of its log (lines are numbered within them)",)
    source = f"container {docker.name_of(info)}"
    explanation = judge(
        scanner.diagnoses(),
        probed.facts,
        ended=ended,
        need=need,
        notes=notes,
        source=source,
        clues=scanner.clues,
        gpus=gpus,
    )
    if unread and not explanation.diagnoses:  # nothing read is no evidence of health: could not probe, exit 3
        raise ProbeError(f"{source}: {unread}, and its State alone shows no failure: nothing to judge")
    return explanation
