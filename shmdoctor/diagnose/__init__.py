"""explain's core: the catalogue of failure texts (catalogue), matching lines against it (scan), and weighing the
matches against the facts of the place the job ran in (judge). Pure: no I/O in this package."""

from .catalogue import BY_ID, CAUSES, CONSUMERS, SHM_CAUSES, SIGNATURES, Signature
from .judge import Exit, Explanation, Measured, judge
from .scan import Diagnosis, Scanner, anchors, scan_text

__all__ = [
    "BY_ID",
    "CAUSES",
    "CONSUMERS",
    "SHM_CAUSES",
    "SIGNATURES",
    "Diagnosis",
    "Exit",
    "Explanation",
    "Measured",
    "Scanner",
    "Signature",
    "anchors",
    "judge",
    "scan_text",
]
