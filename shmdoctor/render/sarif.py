"""lint's and audit's documents as SARIF 2.1.0, for code scanning (GitHub's upload-sarif, GitLab, IDEs).

One run; its driver names shmdoctor, its version and every rule of the catalogue (rules.catalogue(), in words from
rule_help.HELP, each with helpUri: the rules page beside the Documentation URL of the installed package's metadata,
at the rule's anchor: docs/rules.md#rule-<id>).
One result per finding, with the fix in its message. Code scanning refuses a result without a physical location:
lint's is the file as given and the line the workload's definition starts on (1 where the format keeps no lines:
JSON); stdin and audit's containers have no file, so theirs is a placeholder artifact that says so, and the target
(service, workload or container) is the result's logical location in every case.
"""

from __future__ import annotations

import json
import os
from importlib import metadata
from typing import Any
from urllib.parse import quote, urljoin

from ..manual import urls
from ..model import Facts, Finding, Fix, Report, Severity
from ..probe.documents import STDIN
from ..reports import Audit, Lint, Reports
from ..rule_help import HELP
from ..rules import catalogue
from . import forms

VERSION = "2.1.0"
SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS: dict[Severity, str] = {"error": "error", "warning": "warning", "info": "note"}
# The artifacts of targets that have no file: a relative URI code scanning accepts, said to be none in its description.
NO_FILE = {"stdin": "shmdoctor-stdin", "audit": "shmdoctor-container-engine"}


def _version() -> str:
    try:
        return metadata.version("shmdoctor")
    except metadata.PackageNotFoundError:
        return "unknown"


def rule_descriptors(docs: str | None) -> list[dict[str, Any]]:
    out = []
    for rule in catalogue():
        help_ = HELP[rule.id]
        descriptor: dict[str, Any] = {
            "id": rule.id,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": help_.description},
            "help": {"text": help_.fix},
            "defaultConfiguration": {"level": LEVELS[rule.severity]},
        }
        if docs:
            descriptor["helpUri"] = urljoin(docs, f"rules.md#rule-{rule.id}")
        out.append(descriptor)
    return out


def _fix(fix: Fix, facts: Facts) -> str:
    """The summary, then what to write in the target's own form (render/forms.py)."""
    said = forms.line(fix, facts)
    written = f" ({said})" if said != fix.summary else ""
    return fix.summary + written + (f" (caveat: {fix.caveat})" if fix.caveat else "")


def _message(finding: Finding, facts: Facts) -> str:
    """The finding, then its fixes (each one its form can say): code scanning shows the message alone."""
    fixes = "; or: ".join(_fix(fix, facts) for fix in finding.fixes if forms.applies(fix, facts))
    return finding.message + (f". Fix: {fixes}" if fixes else "")


def _uri(path: str) -> str:
    """A path as given, as a URI reference: relative stays relative (code scanning resolves it against the
    repository), absolute becomes file://."""
    return ("file://" if os.path.isabs(path) else "") + quote(path.replace(os.sep, "/"))


def _location(report: Report, doc: Reports) -> dict[str, Any]:
    target = report.facts.target
    if isinstance(doc, Lint) and target.file and target.file != STDIN:
        artifact: dict[str, Any] = {"uri": _uri(target.file)}
    elif isinstance(doc, Lint):
        artifact = {"uri": NO_FILE["stdin"], "description": {"text": "no file: the definition was read from stdin"}}
    else:
        engine = f" on {doc.engine}" if isinstance(doc, Audit) and doc.engine else ""
        text = f"no file: a running container{engine}, read through the engine (see the logical location)"
        artifact = {"uri": NO_FILE["audit"], "description": {"text": text}}
    return {
        "physicalLocation": {"artifactLocation": artifact, "region": {"startLine": target.line or 1}},
        "logicalLocations": [{"name": target.name, "fullyQualifiedName": target.name, "kind": "resource"}],
    }


def _related(report: Report) -> dict[str, Any]:
    """relatedLocations: the other files of a compose set that define the target, and what each holds."""
    places = report.facts.target.related
    if not places:
        return {}
    return {
        "relatedLocations": [
            {
                "id": i,
                "physicalLocation": {"artifactLocation": {"uri": _uri(p.file)}, "region": {"startLine": p.line or 1}},
                "message": {"text": p.why},
            }
            for i, p in enumerate(places)
        ]
    }


def to_sarif(doc: Reports) -> str:
    links = urls()
    index = {rule.id: i for i, rule in enumerate(catalogue())}
    results = []
    for report in doc.reports:
        for finding in report.findings:
            result: dict[str, Any] = {
                "ruleId": finding.id,
                "ruleIndex": index[finding.id],
                "level": LEVELS[finding.severity],
                "message": {"text": _message(finding, report.facts)},
                "locations": [_location(report, doc)],
                **_related(report),
            }
            if finding.suppressed:  # listed, and code scanning shows it dismissed
                said = finding.suppressed
                result["suppressions"] = [{"kind": said.kind, "status": "accepted", "justification": said.by}]
            results.append(result)
    driver: dict[str, Any] = {
        "name": "shmdoctor",
        "version": _version(),
        "rules": rule_descriptors(links.get("Documentation")),
    }
    if links.get("Homepage"):
        driver["informationUri"] = links["Homepage"]
    run: dict[str, Any] = {"tool": {"driver": driver}, "results": results, "columnKind": "unicodeCodePoints"}
    if isinstance(doc, Lint) and doc.errors:  # files that could not be judged: the run did not judge everything
        notes = [{"level": "error", "message": {"text": error}} for error in doc.errors]
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notes}]
    return json.dumps({"$schema": SCHEMA, "version": VERSION, "runs": [run]}, indent=2)
