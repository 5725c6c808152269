"""edit/write on real files in a temporary folder: --fix writes a file reached through a link only where the link
leads into the paths given (within: paths compared as the kernel resolves them, never as strings that happen to sort
one way), and never a file that is not what lint read, byte for byte (write)."""

from __future__ import annotations

import pytest

from shmdoctor.edit.write import NotWritten, within, write


def test_a_file_named_without_a_link_is_within_wherever_it_is(tmp_path):
    """A compose file's include outside the folder given is read through no link: it is written."""
    given, outside = tmp_path / "repo", tmp_path / "shared"
    given.mkdir(), outside.mkdir()
    (outside / "base.yml").write_text("services: {}\n")
    assert within(str(outside / "base.yml"), [str(given)])


def test_a_link_out_of_the_paths_given_is_not_within_whichever_way_the_names_sort(tmp_path):
    given = tmp_path / "m-repo"
    given.mkdir()
    for target_folder in ("a-before", "z-after"):  # the target's path sorts before, then after the link's
        target = tmp_path / target_folder / "secret.yml"
        target.parent.mkdir()
        target.write_text("services: {}\n")
        link = given / f"to-{target_folder}.yml"
        link.symlink_to(target)
        assert not within(str(link), [str(given)]), target_folder


def test_a_link_into_the_paths_given_is_within(tmp_path):
    given = tmp_path / "repo"
    (given / "deploy").mkdir(parents=True)
    (given / "deploy" / "compose.yml").write_text("services: {}\n")
    (given / "compose.yml").symlink_to(given / "deploy" / "compose.yml")
    assert within(str(given / "compose.yml"), [str(given)])
    assert not within(str(given / "compose.yml"), [str(tmp_path / "elsewhere")])


@pytest.mark.parametrize(
    "now",
    ["A\nB\nC\n!", "A\nB\nC\n\n", "A\nB\nc\n", "A\nB\nB\n", "A\nB\n"],
    ids=["grown", "a-newline", "edited", "edited-lower", "cut"],
)
def test_a_file_that_is_not_what_lint_read_is_not_written(tmp_path, now):
    """Lint read A B C; the file holds more (even one byte, appended in place: the same file), other bytes or fewer."""
    path = tmp_path / "compose.yml"
    path.write_text(now)
    with pytest.raises(NotWritten, match="it changed since lint read it"):
        write(str(path), "A\nB\nC\n", "A\nB\nC\nD\n")
    assert path.read_text() == now


def test_a_file_that_is_what_lint_read_is_written(tmp_path):
    path = tmp_path / "compose.yml"
    path.write_text("A\nB\nC\n")
    write(str(path), "A\nB\nC\n", "A\nB\nC\nD\n")
    assert path.read_text() == "A\nB\nC\nD\n"
