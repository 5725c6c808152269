"""lint's and audit's documents as JUnit XML, the report CI systems read (GitLab's junit artifacts, Jenkins, Azure
Pipelines): one test case a workload, failed where its verdict fails (a finding at --fail-on), skipped where only an
ignore kept it from failing, an error for a file lint could not judge. The elements and attributes of Jenkins'
junit-10.xsd (tests/data/junit/ has it, with its source), which the tests validate against."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..model import SEVERITY_RANK, Finding, Report
from ..probe.documents import STDIN
from ..reports import Lint, Reports
from .escape import escaped
from .sarif import _message

# What XML 1.0 cannot hold even escaped, once escaped() has written out the controls: U+FFFE and U+FFFF
_NOT_XML = re.compile("[\ufffe\uffff]")


def _text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _case(report: Report, classname: str) -> tuple[ET.Element, str]:
    """A workload's test case, and what it came to: passed, failure or skipped."""
    target = report.facts.target
    case = ET.Element("testcase", name=_text(target.name), classname=_text(classname))
    threshold = SEVERITY_RANK[report.fail_on]
    failing = [f for f in report.active if SEVERITY_RANK[f.severity] >= threshold]
    ignored = [f for f in report.findings if f.suppressed and SEVERITY_RANK[f.severity] >= threshold]

    def said(f: Finding) -> str:
        by = f"ignored {f.id} by {f.suppressed.by}" if f.suppressed else f"{f.severity} {f.id}"
        return f"{by}: {_message(f, report.facts)}"

    if failing:
        failure = ET.SubElement(case, "failure", type=failing[0].id, message=_text(failing[0].message))
        failure.text = _text("\n".join(map(said, failing)))
        outcome = "failure"
    elif ignored:
        why = "; ".join(f"{f.id} ignored by {f.suppressed.by}" for f in ignored if f.suppressed)
        ET.SubElement(case, "skipped", message=_text(why)).text = _text("\n".join(map(said, ignored)))
        outcome = "skipped"
    else:
        outcome = "passed"
    rest = [f for f in report.findings if f not in failing and (outcome != "skipped" or f not in ignored)]
    if rest:  # the findings below the threshold, and those ignored below it
        ET.SubElement(case, "system-out").text = _text("\n".join(map(said, rest)))
    return case, outcome


def to_junit(doc: Reports) -> str:
    doc = escaped(doc)  # control characters written out: XML 1.0 cannot hold most of them
    kind = "lint" if isinstance(doc, Lint) else "audit"
    suite = ET.Element("testsuite", name=f"shmdoctor {kind}")
    counts = {"failure": 0, "skipped": 0, "passed": 0}
    for report in doc.reports:
        target = report.facts.target
        classname = (target.file or STDIN) if isinstance(doc, Lint) else f"audit {getattr(doc, 'engine', '')}".strip()
        case, outcome = _case(report, classname)
        suite.append(case)
        counts[outcome] += 1
    errors = doc.errors if isinstance(doc, Lint) else ()
    for error in errors:  # a file lint could not judge: 'file[:line]: why'
        case = ET.SubElement(suite, "testcase", name=_text(error.split(": ", 1)[0]), classname="could not judge")
        ET.SubElement(case, "error", type="could-not-judge", message=_text(error))
    totals = {
        "tests": str(len(doc.reports) + len(errors)),
        "failures": str(counts["failure"]),
        "errors": str(len(errors)),
    }
    suite.attrib.update({**totals, "skipped": str(counts["skipped"])})
    suites = ET.Element("testsuites", {"name": f"shmdoctor {kind}", **totals})
    suites.append(suite)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
