"""audit's document as text (a table of the containers, then their findings) or JSON (shmdoctor/audit/1)."""

from __future__ import annotations

import json

from ..reports import Audit
from . import schema_id
from .json import report_dict
from .text import table


def to_text(doc: Audit) -> str:
    if not doc.reports:
        return f"no {'' if doc.include_exited else 'running '}containers matched on {doc.engine}"
    return table(list(doc.reports), f"{len(doc.reports)} container(s) on {doc.engine}")


def to_json(doc: Audit) -> str:
    return json.dumps(
        {
            "schema": schema_id(doc.kind),
            "verdict": doc.verdict,
            "engine": doc.engine,
            "exec": doc.exec,
            "reports": [report_dict(r) for r in doc.reports],
        },
        indent=2,
    )
