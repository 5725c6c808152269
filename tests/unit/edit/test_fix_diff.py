"""--diff's patch written out by hand from the unified diff format (GNU diff's): a file without a newline at its end
says so after each side's last line, as `diff -u` does, so that `patch` gives back the file --fix would write."""

from __future__ import annotations

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin


def test_a_last_line_without_its_newline_is_said_on_both_sides(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = "services:\n  t:\n    image: pytorch/pytorch\n    shm_size: 64m"
    (tmp_path / "compose.yaml").write_text(text)
    assert main(["lint", "compose.yaml", "--diff", *LOADER]) == 1
    assert capsys.readouterr().out == (
        "--- a/compose.yaml\n"
        "+++ b/compose.yaml\n"
        "@@ -1,4 +1,4 @@\n"
        " services:\n"
        "   t:\n"
        "     image: pytorch/pytorch\n"
        "-    shm_size: 64m\n"
        "\\ No newline at end of file\n"
        "+    shm_size: 1536m\n"
        "\\ No newline at end of file\n"
    )
    assert (tmp_path / "compose.yaml").read_text() == text
