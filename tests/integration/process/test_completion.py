"""Shell completion (docs/completion.md): Click's script generates for bash, zsh and fish, and completes for real:
bash sources it and runs its function on a command line; zsh's and fish's scripts speak the protocol asked here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO, run_cli

MARKS = {  # what each shell's script must hold to register itself for `shmdoctor`
    "bash": "complete -o nosort -F _shmdoctor_completion shmdoctor",
    "zsh": "compdef _shmdoctor_completion shmdoctor",
    "fish": 'complete --no-files --command shmdoctor --arguments "(_shmdoctor_completion)"',
}


@pytest.mark.parametrize("shell", sorted(MARKS))
def test_the_completion_script_generates(shell):
    proc = run_cli(env={"_SHMDOCTOR_COMPLETE": f"{shell}_source"})
    assert proc.returncode == 0 and proc.stderr == ""
    assert MARKS[shell] in proc.stdout


def test_bash_completes_commands_and_choices_through_the_script(tmp_path):
    """The generated script sourced in a real bash, its function called as bash calls it on <TAB>; it runs the
    `shmdoctor` on PATH, here this tree's."""
    script = run_cli(env={"_SHMDOCTOR_COMPLETE": "bash_source"}).stdout
    (tmp_path / "shmdoctor").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m shmdoctor "$@"\n')
    (tmp_path / "shmdoctor").chmod(0o755)
    (tmp_path / "complete.bash").write_text(script)
    probe = (
        "source ./complete.bash; COMP_WORDS=({words}); COMP_CWORD={cword}; _shmdoctor_completion shmdoctor; "
        'printf "%s\\n" "${{COMPREPLY[@]}}"'
    )
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}

    def complete(words: str, cword: int) -> list[str]:
        command = probe.format(words=words, cword=cword)
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert complete("shmdoctor li", 1) == ["lint"]
    assert complete("shmdoctor e", 1) == ["explain", "exporter"]
    assert complete("shmdoctor lint --format ''", 3) == ["text", "json", "sarif", "github", "junit"]
    assert complete("shmdoctor check --format ''", 3) == ["text", "json"]


@pytest.mark.parametrize(
    "words, cword",
    [
        ("shmdoctor lint tr", 2),
        ("shmdoctor lint compose.yml tr", 3),
        ("shmdoctor explain tr", 2),
        ("shmdoctor exporter --textfile tr", 3),
        ("shmdoctor watch --path tr", 3),
        ("shmdoctor clean --path tr", 3),
    ],
)
def test_bash_completes_file_names_for_every_path(tmp_path, words, cword):
    """Each path a command takes asks bash for its own file-name completion (Click's "file" answer: the script turns
    it into `compopt -o default`, which readline then completes from the working directory). compopt works only
    under readline's completion, so a stand-in function says what the script asked of it."""
    script = run_cli(env={"_SHMDOCTOR_COMPLETE": "bash_source"}).stdout
    (tmp_path / "shmdoctor").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m shmdoctor "$@"\n')
    (tmp_path / "shmdoctor").chmod(0o755)
    (tmp_path / "complete.bash").write_text(script)
    probe = (
        'source ./complete.bash; compopt() {{ echo "compopt $*"; }}; '
        "COMP_WORDS=({words}); COMP_CWORD={cword}; _shmdoctor_completion shmdoctor"
    )
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}

    def asked(words: str, cword: int) -> list[str]:
        command = probe.format(words=words, cword=cword)
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert asked(words, cword) == ["compopt", "-o", "default"]
    assert asked("shmdoctor audit tr", 2) == []  # a container's name: no file names offered


@pytest.mark.parametrize(
    "shell, words, expected",
    [
        ("zsh", "shmdoctor lint --fail-on ", ["plain", "error", "_", "plain", "warning", "_"]),
        ("fish", "shmdoctor lint --fail-on ", ["plain,error", "plain,warning"]),
    ],
)
def test_zsh_and_fish_get_their_answers_in_their_protocol(shell, words, expected):
    """What zsh's and fish's scripts ask `shmdoctor` (their shells are not installed here)."""
    env = {
        "_SHMDOCTOR_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": "" if shell == "fish" else "3",
    }
    proc = run_cli(env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == expected
