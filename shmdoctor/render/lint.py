"""lint's document as text (a table of the targets, then each one's fix in its own language) or JSON
(shmdoctor/lint/1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..reports import Lint
from . import schema_id
from .json import report_dict
from .text import fixes_by_target, table, terminal_width, wrap

if TYPE_CHECKING:
    from ..edit import FileFix


def to_text(doc: Lint) -> str:
    n = len(doc.reports)
    targets = "1 service or workload" if n == 1 else f"{n} services and workloads"
    files = len(doc.sources)
    out = [f"shmdoctor lint: {targets} in {files} file" + "s"[files == 1 :]]
    if doc.errors:
        out[0] += f"; {len(doc.errors)} could not be judged"
    if doc.reports:
        fixes = fixes_by_target(list(doc.reports))
        out = [table(list(doc.reports), out[0])] + ([fixes] if fixes else [])
    said = []
    if doc.passed_over:
        said.append(f"passed over {len(doc.passed_over)} objects without a pod template: " + ", ".join(doc.passed_over))
    said += [f"passed over {why}" for why in doc.files_passed_over]
    said += [f"could not judge {why}" for why in doc.errors]
    columns = terminal_width()
    return "\n".join(out + [line for one in said for line in wrap(one, columns, 4)])


def _document(doc: Lint) -> dict[str, Any]:
    return {
        "schema": schema_id(doc.kind),
        "verdict": doc.verdict,
        "passed_over": list(doc.passed_over),
        "files_passed_over": list(doc.files_passed_over),
        "errors": list(doc.errors),
        "reports": [report_dict(r) for r in doc.reports],
    }


def to_json(doc: Lint) -> str:
    return json.dumps(_document(doc), indent=2)


def diffs_json(doc: Lint, changes: Sequence[FileFix]) -> str:
    """lint --diff --format json: lint's document with `diffs`, the patch --fix would write into each file."""
    diffs = [
        {
            "file": c.path,
            "patch": c.diff(),
            "written": list(c.written) if not c.refused else [],
            "not_written": list(c.printed) + ([f"{c.path}: {c.refused}"] if c.refused else []),
        }
        for c in changes
    ]
    return json.dumps({**_document(doc), "diffs": diffs}, indent=2)
