"""--fix writes a file reached through a link only where the link leads into the paths given (edit/write.within),
on real links in a temporary folder: the file's own path, the link's and its target's, compared as the kernel
resolves them (os.path.realpath), never as strings that happen to sort one way."""

from __future__ import annotations

from shmdoctor.edit.write import within


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
