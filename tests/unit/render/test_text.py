"""The text report says every value of the typed facts in words, and the JSON Schema allows exactly those values."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from shmdoctor import render
from shmdoctor.model import IpcMode, Runtime, ShmSource
from shmdoctor.render.text import IPC_MODES, SOURCES


@pytest.mark.parametrize("literal, words", [(ShmSource, SOURCES), (IpcMode, IPC_MODES)], ids=["source", "ipc"])
def test_every_value_has_a_description_and_nothing_else_does(literal, words):
    assert set(words) == set(get_args(literal))
    assert all(text.strip() for text in words.values())


def test_the_schema_allows_exactly_the_values_of_the_model():
    report = json.loads(render.schema_file(render.schema_id("check")).read_text())["$defs"]["report"]["properties"]
    assert report["shm"]["properties"]["source"]["enum"] == list(get_args(ShmSource))
    assert report["ipc"]["properties"]["mode"]["enum"] == list(get_args(IpcMode))
    assert report["runtime"]["enum"] == list(get_args(Runtime))
