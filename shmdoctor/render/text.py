"""A Report as text, and the pieces other text renderers share (style, fix lines, the audit/lint table).

The report puts the verdict and the fix first, then findings, facts and the need: read in five seconds."""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Sequence

import click

from ..model import ENGINE_DEFAULT_SHM, Facts, Fix, IpcMode, Report, Requirement, ShmSource
from ..sizes import format_size

_VERDICT_STYLE = {"ok": ("OK", "green"), "warn": ("WARN", "yellow"), "fail": ("FAIL", "red")}
_SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "blue"}
_DEFAULT = format_size(ENGINE_DEFAULT_SHM)
# Every value of ShmSource and IpcMode, in words (tests/unit/render/test_text.py proves both maps total).
SOURCES: dict[ShmSource, str] = {
    "docker-shm": f"Docker's shm mount (--shm-size, {_DEFAULT} by default)",
    "podman-shm": "Podman's shm mount (--shm-size, 62.5 MiB by default)",
    "runtime-shm": f"the container runtime's default ({_DEFAULT})",
    "tmpfs": "a tmpfs mounted over /dev/shm",
    "host": "the host's /dev/shm, bound in",
    "host-ipc": "the host's /dev/shm (IPC host)",
    "k8s-emptydir": "a memory-backed emptyDir",
    "k8s-emptydir-disk": "a disk-backed emptyDir (not memory)",
    "system": "this machine's own",
    "none": "none",
    "unknown": "unknown origin",
}
IPC_MODES: dict[IpcMode, str] = {
    "host": "the host's namespace and /dev/shm",
    "private": "its own namespace",
    "shareable": "its own namespace, which others may join",
    "container": "another container's namespace and /dev/shm",
    "none": "its own namespace, with no /dev/shm mounted",
    "unknown": "not known",
}


def style(text: str, color: str, bold: bool = False) -> str:
    """Coloured, unless NO_COLOR is set and --color always was not given (click.echo then takes the codes off
    where the output is no terminal, or --color never)."""
    forced = click.get_current_context(silent=True)
    if os.environ.get("NO_COLOR") and not (forced and forced.color):
        return text
    return click.style(text, fg=color, bold=bold)


def fix_lines(fixes: list[Fix], facts: Facts, margin: int = 0) -> list[str]:
    """Each fix said in the target's own form (render/forms.py), one it cannot say left out; `margin`: the columns
    the caller puts before each line."""
    from . import forms  # imported where a report has a fix to say: check's fine report does without

    return said_lines(
        [(forms.block(fix, facts), fix.summary, fix.caveat) for fix in fixes if forms.applies(fix, facts)], margin
    )


def said_lines(said: list[tuple[str | None, str, str | None]], margin: int = 0) -> list[str]:
    """'Fix  <body>  <why>' then ' or  ...' for (body, summary, caveat): a one-line body and its reason side by
    side, a longer one as a block under its reason. Reasons wrap at spaces to the terminal's width, less `margin`."""
    columns = terminal_width()
    columns = columns - margin if columns else None
    out = []
    for i, (body, summary, caveat) in enumerate(said):
        lead = "Fix   " if i == 0 else " or   "
        why = summary + (f" (caveat: {caveat})" if caveat else "")
        if not body:
            out += wrap(lead + why, columns, len(lead))
        elif "\n" in body:
            out += wrap(lead + why + ":", columns, len(lead))
            out.extend("        " + line for line in body.splitlines())
        else:
            head = f"{lead}{body:<44}  "
            first, *rest = beside(head, why, columns)
            out += [head + style(first, "bright_black") if first else head.rstrip(), *rest]
    return out


def shm_summary(report: Report) -> str:
    shm = report.facts.shm
    if not shm.present:
        return "none"
    if shm.size_bytes is None and shm.source in ("host", "host-ipc"):  # ipc: host in a file, a remote engine's
        return "host's"
    if shm.used_bytes is None:  # a file (lint): nothing runs, nothing is used
        return format_size(shm.size_bytes)
    return f"{format_size(shm.size_bytes)}, {format_size(shm.used_bytes)} used"


def report(report: Report) -> str:
    need = report.requirement
    label, color = _VERDICT_STYLE[report.verdict]
    out = [f"{style(label, color, bold=True)}  {report.headline()}"]

    top = next((f for f in report.active if f.severity != "info" and f.fixes), None)
    if top:
        out.append("")
        out.extend(fix_lines(list(top.fixes), report.facts))

    if report.findings:
        out.append("\nFindings")
        for f in report.findings:
            message = "(the verdict above)" if f.message == report.headline() else f.message
            if f.suppressed:
                out.append(f"  {'ignored':<8}{f.id:<16} by {f.suppressed.by}: {message}")
                continue
            out.append(f"  {style(f'{f.severity:<8}', _SEVERITY_STYLE[f.severity])}{f.id:<16} {message}")

    out.extend(facts_lines(report))

    if need is not None:
        out.extend(need_lines(need))
    for note in report.notes:
        out.append(f"note: {note}")
    return "\n".join(out)


def need_lines(need: Requirement) -> list[str]:
    """The Need section: the sum, then one line a consumer where more than one takes part (a single consumer other
    than the DataLoader: its term and formula on the sum's line)."""
    loader = need.loader
    settings = (
        f"batch_size {loader.batch_size}, num_workers {loader.num_workers}, "
        f"prefetch_factor {loader.prefetch_factor}, pin_memory {str(loader.pin_memory).lower()}, "
        f"ranks {loader.ranks}; one batch {format_size(loader.batch_bytes)}"
        if loader
        else ""
    )
    terms = [n.term for n in need.breakdown]
    if len(terms) == 1 and terms != ["dataloader"]:
        return [f"\nNeed    {format_size(need.bytes)} for {terms[0]}: {need.breakdown[0].formula.removeprefix('0: ')}"]
    out = [f"\nNeed    {format_size(need.bytes)} = {need.formula}"]
    if terms == ["dataloader"]:
        return out + [f"        {settings}"]
    for n in need.breakdown:
        formula = n.formula.removeprefix("0: ")  # its 0 B is on the line already
        out.append(f"        {n.term:<11} {format_size(n.bytes):>10}  {formula}")
        if n.term == "dataloader":
            out.append(f"        {'':<11} {'':>10}  {settings}")
    return out


def facts_lines(report: Report) -> list[str]:
    """The Facts section: where, /dev/shm (size, use, origin), IPC, memory, ulimit and CPUs."""
    facts = report.facts
    out = []
    where = "not in a container" if facts.runtime == "none" else f"{facts.runtime} container"
    out.append(f"\nFacts   {facts.target.name} ({where})")
    shm = facts.shm
    if shm.present:
        out.append(
            f"  /dev/shm   {format_size(shm.size_bytes)}, {format_size(shm.used_bytes)} used, "
            f"{format_size(shm.free_bytes)} free: {SOURCES[shm.source]}"
        )
    else:
        out.append("  /dev/shm   none")
    owner = f" (owner {facts.ipc.owner})" if facts.ipc.owner else ""
    out.append(f"  IPC        {facts.ipc.mode}{owner}: {IPC_MODES[facts.ipc.mode]}")
    mem = facts.memory
    limit = f"limit {format_size(mem.limit_bytes)}" if mem.limit_bytes else "no limit"
    out.append(f"  memory     {limit}, {format_size(mem.used_bytes)} used")
    # None: no soft limit where shmdoctor runs; not set, for a container told by its definition or inspect
    nofile = facts.nofile or ("unlimited" if facts.target.kind == "local" else "the engine's default")
    out.append(f"  ulimit -n  {nofile}" + (f"    CPUs {facts.cpus:g}" if facts.cpus else ""))
    return out


def table(reports: list[Report], title: str) -> str:
    """audit and lint: one row per target (verdict, shm, IPC, need, first fix), then each target's findings."""
    from . import forms

    rows = [("VERDICT", "TARGET", "SHM", "IPC", "NEED", "FIX")]
    for r in reports:
        fix = next((fx for f in r.active if f.severity != "info" for fx in f.fixes if forms.applies(fx, r.facts)), None)
        rows.append(
            (
                _VERDICT_STYLE[r.verdict][0],
                r.facts.target.name,
                shm_summary(r),
                r.facts.ipc.mode + (f":{r.facts.ipc.owner}" if r.facts.ipc.owner else ""),
                format_size(r.requirement.bytes) if r.requirement else "-",
                forms.line(fix, r.facts) if fix else "-",
            )
        )
    columns = terminal_width()
    lines = [title]
    for n, row in enumerate(_fitted(rows, columns)):
        if n:
            row[0] = row[0].replace(rows[n][0], style(rows[n][0], _VERDICT_STYLE[reports[n - 1].verdict][1], True), 1)
        lines += row
    for r in reports:
        name = r.facts.target.name
        for f in r.findings:
            if f.suppressed:
                lines += wrap(f"  {name}: ignored {f.id} by {f.suppressed.by}", columns, 4)
            elif f.severity != "info":
                said = wrap(f"  {name}: {f.severity} {f.id}: {f.message}", columns, 4)
                said[0] = said[0].replace(f": {f.severity} ", f": {style(f.severity, _SEVERITY_STYLE[f.severity])} ", 1)
                lines += said
        lines += [line for note in r.notes for line in wrap(f"  {name}: note: {note}", columns, 4)]
        lines += [
            line
            for p in r.facts.target.related
            for line in wrap(f"  {name}: also: {p.file}{f':{p.line}' if p.line else ''} ({p.why})", columns, 4)
        ]
    return "\n".join(lines)


def terminal_width() -> int | None:
    """The columns of the terminal the text goes to (COLUMNS first, as shutil reads it); None where it goes to a
    pipe or a file, which take lines whole."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def beside(head: str, text: str, columns: int | None) -> list[str]:
    """text after head, cut at spaces into the column head leaves of the terminal (the lines after the first start
    under it); under head, indented 8, where head leaves less than MIN_CELL columns. The first is the text's part
    alone, to go after head ("" where it all goes under head); the others are whole lines."""
    if not columns or len(head) + len(text) <= columns:
        return [text]
    indent = len(head) if columns - len(head) >= MIN_CELL else 8
    parts = textwrap.wrap(text, columns - indent, break_long_words=False, break_on_hyphens=False)
    if indent < len(head):
        return ["", *(" " * indent + part for part in parts)]
    return [parts[0], *(" " * indent + part for part in parts[1:])]


def wrap(line: str, columns: int | None, indent: int) -> list[str]:
    """A line cut at spaces to fit `columns`, the lines after the first indented by `indent` spaces (a word longer
    than a line stays whole: a name or a command is never cut); the line whole where columns is None."""
    if not columns or len(line) <= columns:
        return [line]
    return textwrap.wrap(
        line, columns, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False
    ) or [line]


FLEXIBLE = (1, 5)  # the table's columns that wrap to fit a terminal: the target's name and the fix
MIN_CELL = 16  # columns a wrapped cell keeps, however narrow the terminal


def _fitted(rows: Sequence[tuple[str, ...]], columns: int | None) -> list[list[str]]:
    """Each row as its lines, its cells in columns two spaces apart. Where the table is wider than the terminal,
    the target and the fix share what the other columns leave, each cell cut after a space, '/' or ':'."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    gaps = 2 * (len(widths) - 1)
    if columns and sum(widths) + gaps > columns:
        room = columns - gaps - sum(w for i, w in enumerate(widths) if i not in FLEXIBLE)
        target, fix = widths[FLEXIBLE[0]], widths[FLEXIBLE[1]]
        fix = min(fix, max(room - target, room // 2, MIN_CELL))
        widths[FLEXIBLE[0]], widths[FLEXIBLE[1]] = min(target, max(room - fix, MIN_CELL)), fix
    out = []
    for row in rows:
        cells = [_cut(cell, w) for cell, w in zip(row, widths)]
        height = max(len(c) for c in cells)
        out.append(
            [
                "  ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths)).rstrip()
                for k in range(height)
            ]
        )
    return out


_BREAKS = re.compile(r"[^ /:]*[/:]+| +|[^ /:]+")  # a path's parts, a name's, words and the spaces between


def _cut(cell: str, width: int) -> list[str]:
    """A cell in lines of at most `width`, cut after a space, '/' or ':' (a part longer than a line stays whole)."""
    if len(cell) <= width:
        return [cell]
    lines = [""]
    for part in _BREAKS.findall(cell):
        if lines[-1] and len(lines[-1]) + len(part.rstrip()) > width:
            lines.append("")
        if lines[-1] or not part.isspace():
            lines[-1] += part
    return [line.strip() for line in lines]


def fixes_by_target(reports: list[Report]) -> str:
    """lint: each target's fix in full, in its own language (a compose or manifest snippet does not fit a table)."""
    out = []
    for r in reports:
        top = next((f for f in r.active if f.severity != "info" and f.fixes), None)
        if top:
            out.append(f"\n{r.facts.target.name}  ({top.id})")
            out.extend("  " + line for line in fix_lines(list(top.fixes), r.facts, margin=2))
    return "\n".join(out)
