"""check's document, a Report, as text or JSON (schema shmdoctor/check/1)."""

from __future__ import annotations

import json

from ..model import Report
from . import schema_id
from .json import report_dict
from .text import report


def to_text(doc: Report) -> str:
    return report(doc)


def to_json(doc: Report) -> str:
    return json.dumps({"schema": schema_id(doc.kind), **report_dict(doc)}, indent=2)
