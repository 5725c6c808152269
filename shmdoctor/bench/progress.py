"""Progress on stderr: a rich bar on a terminal, one plain line a config elsewhere (logs, CI, images without rich)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable

import click

from .model import Result


def _line(result: Result, cuda: bool) -> str:
    took = f"{result.batch_seconds:.3f} s a batch" if result.batch_seconds else result.message
    return f"{result.config.label(cuda)}: {result.status}, {took}"


@contextmanager
def progress(total: int, cuda: bool) -> Iterator[Callable[[Result], None]]:
    """Yields a callback to call after each config."""
    try:
        if not sys.stderr.isatty():
            raise ImportError
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        count = [0]

        def plain(result: Result) -> None:
            count[0] += 1
            click.echo(f"[{count[0]}/{total}] {_line(result, cuda)}", err=True)

        yield plain
        return
    bar = Progress(
        TextColumn("bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task("", total=total)

        def advance(result: Result) -> None:
            bar.console.print(_line(result, cuda), highlight=False)
            bar.update(task, advance=1)

        yield advance
