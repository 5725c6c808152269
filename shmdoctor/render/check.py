"""check's document, a Report, as text or JSON (schema shmdoctor/check/1)."""

from __future__ import annotations

from ..model import Report
from .text import report


def to_text(doc: Report) -> str:
    return report(doc)


def to_json(doc: Report) -> str:
    import json  # here: text output does not pay for it

    from . import schema_id
    from .json import report_dict

    return json.dumps({"schema": schema_id(doc.kind), **report_dict(doc)}, indent=2)
