"""A name cannot drive the terminal: every text output escapes control characters, once, in render()."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shmdoctor.loader import LoaderSpec, loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.probe import files
from shmdoctor.probe.holders import Holder, Holders, Segment
from shmdoctor.render import render
from shmdoctor.render.escape import _UNSAFE, _UNSAFE_IN_A_NAME, escape, escaped
from shmdoctor.reports import Lint
from shmdoctor.rules import judge
from shmdoctor.shm.sampling import Sampler
from shmdoctor.sizes import GiB, MiB

# A window title, a screen clear, a bell, C1's CSI, a right-to-left override, a lone surrogate: what names have carried.
HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eexe.txt\ud800"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@pytest.fixture(autouse=True)
def no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")  # then any escape character in the output came from a name


@pytest.mark.parametrize(
    "text, one_line, expected",
    [
        ("trainer-1", True, "trainer-1"),
        ("é 中文 🙂", True, "é 中文 🙂"),  # text is not control
        ("a\x1b[2Jb", True, "a\\x1b[2Jb"),
        ("t\x1b]0;title\x07", True, "t\\x1b]0;title\\x07"),
        ("\x9b2J\x7f", True, "\\x9b2J\\x7f"),
        ("abc\u202ecod.exe", True, "abc\\u202ecod.exe"),
        ("lone\ud800", True, "lone\\ud800"),
        ("two\nlines", True, "two\\nlines"),  # a name is one line: no forged row
        ("two\nlines", False, "two\nlines"),  # a snippet keeps its lines
        ("tab\there", False, "tab\\there"),
    ],
)
def test_escape(text, one_line, expected):
    assert escape(text, one_line=one_line) == expected


@given(st.text())
def test_nothing_unsafe_survives_escape(text):
    assert not UNSAFE.search(escape(text, one_line=False))
    assert "\n" not in escape(text)


def test_every_character_escaped_is_one_isprintable_refuses():
    """escape() gives a printable string back unsearched: sound while every character its patterns match is one that
    str.isprintable() refuses. Counted here: C0 but the newline 31, DEL and C1 33, the bidirectional marks and
    overrides 12, the surrogates 2048; a name's line breaks 3 more."""
    every = [chr(c) for c in range(sys.maxunicode + 1)]
    unsafe = [c for c in every if re.match(_UNSAFE, c)]
    in_a_name = [c for c in every if re.match(_UNSAFE_IN_A_NAME, c)]
    assert (len(unsafe), len(in_a_name)) == (31 + 33 + 12 + 2048, 31 + 33 + 12 + 2048 + 3)
    assert set(unsafe) < set(in_a_name)
    assert not [c for c in in_a_name if c.isprintable()]


def test_a_document_without_control_characters_is_the_same_object():
    report = judge(
        Facts(Target("local", "t"), Shm(True, GiB, 0, GiB, "docker-shm"), Ipc("private"), Memory(None, 0)), None
    )
    assert escaped(report) is report


def _facts(name: str) -> Facts:
    return Facts(
        Target("container", name), Shm(True, 64 * MiB, 0, 64 * MiB, "docker-shm"), Ipc("private"), Memory(None, 0)
    )


def test_check_text_escapes_a_hostile_name():
    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    text = render(judge(_facts(HOSTILE), need), "text")
    assert not UNSAFE.search(text) and "evil\\x1b]0;pwned\\x07\\x1b[2J" in text
    assert "\ud800" not in render(judge(_facts(HOSTILE), need), "json")  # JSON escapes its own (\\ud800)


def test_lint_text_escapes_hostile_service_names(tmp_path):
    compose = tmp_path / "compose.yml"
    compose.write_text('services:\n  "svc\\e]0;pwned\\a\\e[2J":\n    image: x\n  "two\\nOK  forged":\n    image: y\n')
    inputs = files.read([str(compose)])
    reports = tuple(
        judge(d.facts, LoaderSpec(batch_size=8, num_workers=2, sample_bytes=MiB).requirement())
        for d in inputs.definitions
    )
    text = render(Lint(reports, sources=tuple(inputs.sources)), "text")
    assert not UNSAFE.search(text)
    assert "svc\\x1b]0;pwned\\x07\\x1b[2J" in text and "two\\nOK  forged" in text
    assert not any(line.startswith("OK  forged") for line in text.splitlines())


def test_watch_text_escapes_a_holders_command():
    sampler = Sampler("/dev/shm", holders_every=2.0, budget=None)
    held = Holders((Holder(7, f"python {HOSTILE}.py", (Segment(1, "/torch_7_1", 4096, True),)),), pids=frozenset({7}))
    lines = [render(sampler.start(0.5), "text"), render(sampler.record(0.0, GiB, 4096, held), "text")]
    lines.append(render(sampler.summary(1.0), "text"))
    assert not UNSAFE.search("\n".join(lines)) and "evil\\x1b]0;pwned" in "\n".join(lines)
