"""Findings that do not count: ignored for one workload by its own comment, label or annotation, or by rule for a
whole command (--ignore, --select, as ruff spells them). A suppressed finding stays in the report, marked with why
(model.Suppression), so every renderer lists it; it counts for neither the verdict nor the exit code.

    # shmdoctor: ignore=probe-incomplete,default-shm     on the workload's line or the line above it
    shmdoctor.ignore: "probe-incomplete"                  a label (compose, Docker, Podman) or an annotation
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import click

from .errors import UsageError
from .model import Report, Suppression, Value

IGNORE_LABEL = "shmdoctor.ignore"
COMMENT = re.compile(r"#\s*shmdoctor:\s*ignore\s*=\s*([^\s#]*)")
MAX_RULES = 64  # rule IDs one ignore may name (the catalogue has fewer)
Doc = TypeVar("Doc")


def rule_ids(text: str, where: str) -> frozenset[str]:
    """The rules a comma-separated list names; UsageError (exit 2) for an empty list or a rule not in the
    catalogue, said with where the list is."""
    from .rules import catalogue

    ids = [part.strip() for part in text.split(",") if part.strip()][: MAX_RULES + 1]
    if not ids or len(ids) > MAX_RULES:
        raise UsageError(f"{where}: name 1 to {MAX_RULES} rules, comma-separated (docs/rules.md lists them)")
    known = {r.id for r in catalogue()}
    unknown = [i for i in ids if i not in known]
    if unknown:
        listed = ", ".join(repr(i[:60]) for i in unknown[:3])
        raise UsageError(f"{where}: no rule {listed} (the rules: {', '.join(sorted(known))})")
    return frozenset(ids)


@dataclass(frozen=True, eq=False, repr=False)
class Ignore(Value):
    """The rules one workload's own comment, label or annotation ignores, and where that is said."""

    rules: frozenset[str]
    by: str


def in_source(lines: list[str], line: int | None, label: str | None, at: str) -> Ignore | None:
    """A workload's ignore: `# shmdoctor: ignore=...` on its line (1-based) or the line above, else its
    shmdoctor.ignore label's value; `at` names its file. UsageError where either names no known rule."""
    for number in _around(lines, line):
        if 0 < number <= len(lines):
            found = COMMENT.search(lines[number - 1])
            if found:
                where = f"{at}:{number}"
                return Ignore(rule_ids(found.group(1), f"{where}: # shmdoctor: ignore="), f"the comment at {where}")
    if label is not None:
        return Ignore(rule_ids(label, f"{at}: its {IGNORE_LABEL} label"), f"its {IGNORE_LABEL} label")
    return None


def _around(lines: list[str], line: int | None) -> list[int]:
    """The lines a workload's comment may be on: its line, the line above; and where that is the key it is defined
    under (a compose service's `trainer:` above its first key, where its definition starts), the line above that."""
    if not line or line > len(lines):
        return []
    above = lines[line - 2].split("#")[0].rstrip() if line > 1 else ""
    keyed = above.endswith(":") and not lines[line - 1].lstrip().startswith("-")  # not a list's item (a container)
    return [line, line - 1, line - 2] if keyed else [line, line - 1]


@dataclass(frozen=True, eq=False, repr=False)
class Selection(Value):
    """The command's rules: select (None: all of them) less ignore, said on the command line or in the config file
    `where` names; `under`: the config's, where the command line's leave a rule in (it gave no --select)."""

    ignore: frozenset[str] = frozenset()
    select: frozenset[str] | None = None
    where: str = ""
    under: Selection | None = None

    def why(self, rule: str) -> str | None:
        if rule in self.ignore:
            return f"ignore in {self.where}" if self.where else "--ignore"
        if self.select is not None and rule not in self.select:
            return f"not in select of {self.where}" if self.where else "not in --select"
        return self.under.why(rule) if self.under else None

    @property
    def active(self) -> bool:
        return bool(self.ignore) or self.select is not None or bool(self.under and self.under.active)


def mark(report: Report, ignore: Ignore | None = None, selection: Selection | None = None) -> Report:
    """The report with the findings that `ignore` (the workload's own) or `selection` (the command's) leave out
    marked suppressed; the verdict follows the rest."""
    findings = []
    for f in report.findings:
        why: Suppression | None = f.suppressed
        if why is None and ignore is not None and f.id in ignore.rules:
            why = Suppression(ignore.by, "inSource")
        elif why is None and selection is not None and selection.why(f.id):
            why = Suppression(str(selection.why(f.id)), "external")
        findings.append(f if why is f.suppressed else replace(f, suppressed=why))
    if all(a is b for a, b in zip(findings, report.findings)):
        return report  # the same report: audit's replicas share one judgement
    return replace(report, findings=tuple(findings))


def selected(doc: Doc, selection: Selection) -> Doc:
    """A document (a Report, or audit's and lint's of many) with `selection` marked on every report."""
    if not selection.active:
        return doc
    if isinstance(doc, Report):
        return mark(doc, selection=selection)  # type: ignore[return-value]
    reports = tuple(mark(r, selection=selection) for r in doc.reports)  # type: ignore[attr-defined]
    return replace(doc, reports=reports)  # type: ignore[type-var]


def _rules(ctx: click.Context, param: click.Parameter, values: Iterable[str]) -> frozenset[str] | None:
    given = ",".join(values)
    return rule_ids(given, f"--{param.name}") if given else None  # a rule not known: exit 2, said as one line


def rule_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--ignore RULE and --select RULE, repeatable or comma-separated, as ruff's; the command gets `selection`."""
    for name, what in (
        ("select", "Judge by these rules only; the others' findings are listed as ignored"),
        ("ignore", "Leave out this rule's findings: listed as ignored, counted for neither verdict nor exit code"),
    ):
        f = click.option(
            f"--{name}",
            multiple=True,
            metavar="RULE[,RULE]",
            callback=_rules,
            help=f"{what} (repeatable or comma-separated; docs/rules.md lists them).",
        )(f)
    return f


def selection(ignore: frozenset[str] | None, select: frozenset[str] | None) -> Selection:
    return Selection(ignore or frozenset(), select)
