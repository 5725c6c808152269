"""lint's and audit's documents as GitHub Actions workflow commands: one annotation a finding, at its file and line
(`::error file=F,line=L,title=T::MESSAGE`), then a summary line. Escaped as the Actions toolkit escapes them
(actions/toolkit, packages/core/src/command.ts): in the message %, CR and LF; in a property also ':' and ','."""

from __future__ import annotations

from ..model import Severity
from ..probe.documents import STDIN
from ..reports import Lint, Reports
from .sarif import _message

COMMANDS: dict[Severity, str] = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(doc: Reports) -> str:
    out, ignored = [], 0
    for report in doc.reports:
        target = report.facts.target
        for finding in report.findings:
            if finding.suppressed:  # said in the summary's count: an annotation would show it as a finding
                ignored += 1
                continue
            where = []
            if isinstance(doc, Lint) and target.file and target.file != STDIN:
                where = [f"file={escape_property(target.file)}", f"line={target.line or 1}"]
            title = f"shmdoctor {finding.id}: {target.name}"
            properties = ",".join([*where, f"title={escape_property(title)}"])
            text = escape_data(_message(finding, report.facts))
            out.append(f"::{COMMANDS[finding.severity]} {properties}::{text}")
    counts = {s: sum(1 for r in doc.reports for f in r.active if f.severity == s) for s in COMMANDS}
    kind = "lint" if isinstance(doc, Lint) else "audit"
    summary = (
        f"shmdoctor {kind}: {doc.verdict.upper()}: {len(doc.reports)} target(s), {counts['error']} error(s), "
        f"{counts['warning']} warning(s), {counts['info']} note(s)" + (f", {ignored} ignored" if ignored else "")
    )
    if isinstance(doc, Lint) and doc.errors:
        out += [f"::error title=shmdoctor%3A could not judge::{escape_data(error)}" for error in doc.errors]
    return "\n".join([*out, summary])
