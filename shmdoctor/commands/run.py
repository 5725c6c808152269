"""shmdoctor run: a training command run as a transparent child, its /dev/shm watched, its death explained."""

from __future__ import annotations

import os
import stat

import click

from ..errors import UsageError
from ..limits import MAX_TIMEOUT, MIN_INTERVAL, seconds
from ..numbers import FLOAT
from ..options import loader_options, loader_spec
from ..render import render
from ..render.run import facts_line
from ..wrap.child import reraise
from ..wrap.session import Outcome, bare, supervise


def _writable(path: str) -> None:
    """--report is checked before the command starts (a run is not wasted on a path that cannot be written), and
    written after it ends: nothing is created when the command cannot even start."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        why = "is a directory" if os.path.isdir(path) else "its directory does not exist or is not writable"
        raise UsageError(f"cannot write --report {path}: {why}")
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would wait for a reader
        raise UsageError(f"cannot write --report {path}: not a regular file")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"cannot write --report {path}: permission denied")


def _hold_stderr() -> None:
    """A closed stderr (2>&-) becomes /dev/null: no pipe or file of ours may take its number, the tee writes there."""
    try:
        os.fstat(2)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        if null != 2:
            os.dup2(null, 2)
            os.close(null)


def _say(text: str) -> None:
    """A line of ours on stderr. One that cannot be written (2>/dev/full, a closed pipe) is dropped, and stderr is
    /dev/null from then on, so that Python's flush at exit cannot fail (exit 120) over the command's own code."""
    try:
        click.echo(text, err=True)
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)


def _line_start(outcome: Outcome) -> str:
    """What puts our summary at the start of a line of its own, after a command whose last output had no newline.
    A terminal: as many spaces as it is wide, then a carriage return (zsh's way): from its first column they fill
    the line without wrapping, and the return comes back to it; from any other, they wrap to the next line first.
    A file (2>&1 > log too): its last byte says. A pipe: the last byte of the command's stderr that we copied."""
    try:
        if os.isatty(2):  # of no known width: a newline, never a line overwritten
            columns = os.get_terminal_size(2).columns
            return " " * columns + "\r" if columns else "\n"
        if stat.S_ISREG(os.fstat(2).st_mode):  # opened anew: `2> file` opened it write-only
            fd = os.open("/proc/self/fd/2", os.O_RDONLY | os.O_NONBLOCK)
            try:
                size = os.fstat(fd).st_size
                return "\n" if size and os.pread(fd, 1, size - 1) != b"\n" else ""
            finally:
                os.close(fd)
    except OSError:  # a file we may not read
        pass
    return "\n" if outcome.open_line else ""


def _write_report(path: str, outcome: Outcome) -> None:
    try:
        document = render(outcome, "json")
    except Exception as e:  # a fault of ours: the report holds what is sure
        document = render(bare(outcome.command, outcome.facts, outcome.ended, outcome.stderr_bytes, e), "json")
    try:  # O_NONBLOCK: a FIFO put there since the check is refused (ENXIO), never waited on
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o666)
        with os.fdopen(fd, "w") as f:
            f.write(document + "\n")
    except OSError as e:  # gone since the check: said, and the command's exit code still passed through
        _say(f"shmdoctor: error: cannot write --report {path}: {e.strerror}")


@click.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--interval",
    type=FLOAT,
    default=0.1,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between samples of /dev/shm and the memory cgroup.",
)
@click.option(
    "--holders-every",
    type=FLOAT,
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between scans of /proc for who holds /dev/shm (0: never).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Write the JSON of the run here: facts, peak_bytes, exit status, diagnoses.",
)
@click.option(
    "--no-instrument",
    is_flag=True,
    help="Do not load shmdoctor's sitecustomize into the command's Python processes (it reads each DataLoader's "
    "settings and measures one batch in its workers; without it, give the loader's options).",
)
@loader_options
@click.argument("argv", nargs=-1, required=True, metavar="-- COMMAND [ARGS]...")
def command(interval, holders_every, report_path, no_instrument, argv, **loader) -> int:
    """Run COMMAND as a child, transparently (stdin, stdout, stderr unchanged, signals forwarded, its exit code
    passed through; 128+N for a signal), sampling /dev/shm while it runs. Its Python processes report each
    DataLoader's settings and one batch's bytes (a sitecustomize on its PYTHONPATH; the loader options override
    them). One line of facts before it starts; after a success, its /dev/shm peak against the size and the loaders'
    need; after a failure, the diagnosis and the size that holds that need. All on stderr.

    \b
    shmdoctor run -- python train.py --epochs 10
    shmdoctor run --report run.json -- torchrun --nproc-per-node 8 train.py
    shmdoctor run --batch-size 100 --num-workers 4 --sample-bytes 1MiB -- python train.py
    """
    seconds("--interval", interval, MAX_TIMEOUT, least=MIN_INTERVAL)
    seconds("--holders-every", holders_every, MAX_TIMEOUT, never=True)
    need = loader_spec(**loader).requirement()
    if report_path:
        _writable(report_path)
    _hold_stderr()
    outcome = supervise(
        list(argv),
        need,
        interval=interval,
        holders_every=holders_every,
        before=lambda facts: _say(facts_line(facts, interval)),
        instrumented=not no_instrument,
    )
    start = _line_start(outcome)
    if outcome.fault:
        _say(f"{start}shmdoctor: error: {outcome.fault}")
        start = ""
    try:
        _say(start + render(outcome, "text"))
    except Exception as e:  # a fault of ours: one line, and the command's exit code stands
        _say(f"{start}shmdoctor: error: {bare(outcome.command, outcome.facts, outcome.ended, 0, e).fault}")
    if report_path:
        _write_report(report_path, outcome)
    reraise(outcome.ended)  # dies of the signal the command died of, where it is ours: a shell loop stops
    return outcome.exit_code
