"""Renderers: a Report (or several) in, text out. No judgement here."""
from __future__ import annotations

from enum import Enum


class Format(str, Enum):
    TEXT = "text"
    JSON = "json"
