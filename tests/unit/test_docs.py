"""README.md and the manual (docs/) stay true: the rules page is the registry, every block is run by a test or marked
illustrative, every documented command line parses and every documented option exists, lint's examples of files in
this repository are what lint prints, and each command's --help names its page."""

import json
import re
import runpy
import shlex
from pathlib import Path

import click
import pytest
import tomllib

from shmdoctor.cli import COMMANDS, cli
from tests.helpers import DOC_PAGES, REPO, doc_blocks, forked_cli

BLOCKS = doc_blocks()
GENERATOR = REPO / "scripts" / "docs_pages.py"


def params(command: str) -> set[str]:
    """The options Click's parser takes for `shmdoctor COMMAND` (help included)."""
    found = cli.get_command(click.Context(cli), command)
    assert found is not None, command
    return {"--help", "-h"} | {o for p in found.params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}


def command_lines() -> list[str]:
    """Every `shmdoctor CMD ...` line of the blocks, the command's own part (a comment, a pipe, a redirection off)."""
    lines = []
    for block in BLOCKS:
        for line in block.body.splitlines():
            line = re.sub(r"^\$ ", "", line.strip())
            m = re.search(r"(?:^|\| |&& |\S+=\S+ )shmdoctor ([a-z]+(?: .*)?)$", line)
            if m and not line.startswith("#"):
                text = m.group(1).split(" #")[0].split(" >")[0].split(" |")[0].replace("...", "")
                lines.append(text.strip())
    return lines


# Other programs' flags a command's page names in its prose: docker and podman run's, torchrun's.
FOREIGN = {
    "--ipc",
    "--memory",
    "--mount",
    "--tmpfs",
    "--shm-size",
    "--pid",
    "--ulimit",
    "--log-driver",
    "--nproc-per-node",
    "--label",  # docker run's, in lint's section on scripts
    "--runtime",
    "--gres",  # srun's, in lint's section on Slurm
}


def option_mentions() -> list[tuple[str, str, str]]:
    """(page, command, option) for each option the pages document: in a command line of a block, in an inline code
    span that starts with a command (`shmdoctor audit --all`, `lint --fix`), on a command's page
    (docs/commands/<command>.md) in a span that starts with an option (`--exec`: its own, unless another program's
    flag) and in its option table (docs/consumers.md's options are check's, audit's and lint's)."""
    found = []
    for page in DOC_PAGES:
        text = (REPO / page).read_text()
        spans = [line for b in doc_blocks(page) for line in b.body.splitlines()]
        prose = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M).replace("\n", " ")  # a span may wrap
        spans += re.findall(r"(?<!`)`([^`]+)`(?!`)", prose)
        for span in spans:
            m = re.search(rf"(?:^|\$ |shmdoctor )({'|'.join(COMMANDS)})((?: [^#|>]*)?)", span.strip())
            if m and (span.strip().startswith(("shmdoctor", "$ shmdoctor")) or m.group(2).startswith(" -")):
                args = m.group(2).split(" -- ")[0]  # run: what follows -- is the command's
                found += [(page, m.group(1), o.split("=")[0]) for o in re.findall(r"(?<!\S)--?[a-z][\w-]*\S*", args)]
        owner = {"docs/consumers.md": ("check", "audit", "lint")}.get(page)
        if page.startswith("docs/commands/"):
            owner = (Path(page).stem,)
            own = [span for span in re.findall(r"^--[a-z][\w-]*", "\n".join(spans), re.M) if span not in FOREIGN]
            found += [(page, Path(page).stem, option) for option in own]  # `--exec` on audit's page is audit's
        for option in re.findall(r"^\| `(--[a-z][\w-]*)", text, re.M) if owner else []:
            found += [(page, command, option) for command in owner]
    return found


def test_the_generated_pages_are_what_the_code_makes():
    """docs/rules.md is what scripts/docs_pages.py makes of rules.catalogue() and rule_help.HELP, anchors included;
    each command page's options are its Click parameters, as --help says them."""
    generated = runpy.run_path(str(GENERATOR))  # not as __main__: writes nothing
    for path, text in generated["pages"]().items():
        assert path.read_text() == text, f"{path} is stale: python scripts/docs_pages.py rewrites it"
    from shmdoctor.rules import catalogue

    rules = (REPO / "docs" / "rules.md").read_text()
    assert re.findall(r'<a id="rule-([a-z-]+)"></a>', rules) == [r.id for r in catalogue()]
    check = (REPO / "docs" / "commands" / "check.md").read_text()
    fail_on = "Lowest severity that makes the verdict fail (exit 1). [default: error]"  # --help's own words
    assert f"| `--fail-on` [error\\|warning] | {fail_on} |" in check


def test_every_raw_file_is_linked_from_its_page():
    """Each file of docs/ that is not a page (a measurement's raw output, a chart) is in a folder whose page lists it
    (a `raw files` region, which the test above keeps current): mkdocs copies it to the site, and the page links it."""
    raw = runpy.run_path(str(GENERATOR))["RAW"]
    text = "".join((REPO / page).read_text() for page in DOC_PAGES)
    assets = [p for p in (REPO / "docs").rglob("*") if p.is_file() and p.suffix != ".md"]
    assert assets and not [p for p in assets if raw.format(p.parent.relative_to(REPO / "docs")) not in text]


def test_every_block_is_run_by_a_test_or_marked_illustrative():
    """The convention: an HTML comment on the line before each fence, `<!-- tested: <test file> -->` naming the test
    that runs or compares that block (the file exists and names the page), or `<!-- illustrative -->`."""
    unmarked = [f"{b.page}:{b.line}" for b in BLOCKS if b.marker is None]
    assert not unmarked, f"blocks with neither marker: {unmarked}"
    for b in BLOCKS:
        test = REPO / (b.marker or "").removeprefix("tested: ")
        if b.marker and b.marker.startswith("tested: ") and test != Path(__file__):
            assert test.is_file(), f"{b.page}:{b.line}: no test {test}"
            assert b.page in test.read_text(), f"{b.page}:{b.line}: {test} does not name {b.page}"
    mine = [b for b in BLOCKS if b.marker == f"tested: {Path(__file__).relative_to(REPO)}"]
    assert mine == LINT_OF_FILES, "the blocks this file runs are the ones marked so"


@pytest.mark.parametrize("line", sorted(set(command_lines())))
def test_every_documented_command_line_parses(line):
    """Each `shmdoctor ...` line of the pages, its options and values checked by the real parser (--help: nothing
    runs)."""
    args = shlex.split(line)
    cut = args.index("--") if "--" in args else len(args)  # run: what follows -- is the command, not ours
    proc = forked_cli(*args[:cut], "--help", *args[cut:])
    assert proc.returncode == 0, f"{line}: {proc.stderr}"


def test_every_documented_option_exists():
    mentions = option_mentions()
    assert len(mentions) > 250 and {c for _, c, _ in mentions} == set(COMMANDS)  # the walk finds them
    wrong = sorted({f"{page}: shmdoctor {cmd} {opt}" for page, cmd, opt in mentions if opt not in params(cmd)})
    assert not wrong, f"documented options that do not exist: {wrong}"


def test_the_walk_catches_an_option_that_does_not_exist():
    """The walk's own check, on a line written here: `explain --timeout` exists; `explain --deadline` does not."""
    assert "--timeout" in params("explain") and "--deadline" not in params("explain")
    assert {"--fix", "--diff", "--swarm", "--no-swarm"} <= params("lint")


def test_there_are_command_lines_for_every_command():
    documented = {line.split()[0] for line in command_lines()}
    assert set(COMMANDS) <= documented


def test_each_help_names_its_manual_page():
    """`shmdoctor --help` names the manual's home, each command's help its own page; each page exists, is in the nav of
    mkdocs.yml, and has its exit codes and options."""
    nav = (REPO / "mkdocs.yml").read_text()
    docs = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Documentation"]
    assert docs.endswith("/docs/index.md")  # a pip user's manual is a URL, the pages beside it
    proc = forked_cli("--help")
    assert proc.returncode == 0 and f"Manual: {docs}" in proc.stdout
    for command in COMMANDS:
        page = f"docs/commands/{command}.md"
        proc = forked_cli(command, "--help")
        url = docs.removesuffix("index.md") + page.removeprefix("docs/")
        assert proc.returncode == 0 and f"Manual: {url}" in proc.stdout, command
        assert (REPO / page).is_file() and f": {page.removeprefix('docs/')}\n" in nav
        assert all(f"\n## {part}\n" in (REPO / page).read_text() for part in ("Exit codes", "Options")), page


LINT_OF_FILES = [
    b for b in BLOCKS if b.language == "" and re.match(r"\$ shmdoctor lint (?:tests/data|examples)/\S+", b.body)
]


def examples(block: str) -> list[tuple[str, list[str]]]:
    """Each `$ command` of a block with the lines shown after it."""
    parts: list[tuple[str, list[str]]] = []
    for line in block.strip().splitlines():
        if line.startswith("$ "):
            parts.append((line, []))
        else:
            parts[-1][1].append(line)
    return parts


@pytest.mark.parametrize("block", LINT_OF_FILES, ids=[f"{b.page}:{b.line}" for b in LINT_OF_FILES])
def test_every_lint_example_of_a_file_in_the_repository_is_what_lint_prints(block):
    """Each `$ shmdoctor lint <a file of this repository>` of a block: its lines up to the first '...' are the first
    lines lint prints; after a '...', each line it shows is printed somewhere after, in order."""
    for command, shown in examples(block.body):
        proc = forked_cli(*shlex.split(command)[2:])
        assert proc.returncode in (0, 1), proc.stderr
        printed = proc.stdout.splitlines()
        head = shown[: shown.index("...")] if "..." in shown else shown
        assert printed[: len(head)] == head, command
        rest = printed[len(head) :]
        for line in shown[len(head) + 1 :]:
            if line != "...":
                assert line in rest, line
                rest = rest[rest.index(line) + 1 :]


def test_the_readme_is_a_front_door():
    """README.md: at most 200 lines; the four ways in, each with its commands and a link to its section, within its
    first 100; every link into the manual is relative and names a page that exists."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    first = "\n".join(readme.splitlines()[:100])
    for way, commands in (
        ("My job died", ("explain", "run")),
        ("Will it fit here", ("check",)),
        ("Every container on this host", ("audit", "exporter")),
        ("Before it runs", ("preflight", "lint")),
    ):
        item = re.search(rf"^\d\. \[\*\*{way}.*?(?=^\d\. |^$)", first, re.M | re.S)
        assert item and all(f"`{c}" in item.group() or f".{c}(" in item.group() for c in commands), way
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).is_file(), link
    # its own anchors, as GitHub makes them from its headings: lower case, punctuation off, spaces to hyphens
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", readme, re.M)}
    anchors = set(re.findall(r"\]\(#([^)]+)\)", readme))
    assert len(anchors) == 4 and anchors <= slugs  # the four ways in


@pytest.mark.parametrize("schema", sorted(p.stem for p in (REPO / "shmdoctor/render/schemas").glob("*.json")))
def test_each_command_page_names_its_json_schema(schema):
    page = (REPO / "docs" / "commands" / f"{schema}.md").read_text()
    schema_id = json.loads((REPO / "shmdoctor/render/schemas" / f"{schema}.json").read_text())["$id"]  # its version
    assert f"`{schema_id}`" in page and f"`shmdoctor/render/schemas/{schema}.json`" in page
    assert "\n## JSON\n" in page and "\n## Options\n" in page


def test_every_absolute_link_into_this_repository_names_a_file_of_it():
    """The project URL is the one absolute base (pyproject's [project.urls], the dashboard's links): each link under it
    names a file of this tree, and a `#rule-<id>` anchor a rule of the rules page."""
    base = "https://github.com/shmdoctor/shmdoctor/blob/main/"
    sources = [REPO / "pyproject.toml", *(REPO / "examples").rglob("*.json"), *(REPO / p for p in DOC_PAGES)]
    links = [m for f in sources for m in re.findall(rf"{re.escape(base)}([^\s\"'#)]+)(#[\w-]+)?", f.read_text())]
    assert {"docs/index.md", "docs/rules.md"} <= {path for path, _ in links}
    for path, anchor in links:
        assert (REPO / path).is_file(), path
        assert not anchor or f'<a id="{anchor[1:]}"></a>' in (REPO / path).read_text(), anchor
    homepage = re.search(r'^Homepage = "(.+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert homepage and f"\nrepo_url: {homepage.group(1)}\n" in (REPO / "mkdocs.yml").read_text()


def test_every_page_is_in_the_nav():
    """What `mkdocs build --strict` (scripts/test.sh) refuses, said in the fast lane too: a page of docs/ outside the
    nav of mkdocs.yml, or a nav entry with no page."""
    import yaml

    def entries(nav) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        items = nav.values() if isinstance(nav, dict) else nav
        return [page for item in items for page in entries(item)]

    nav = entries(yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"])
    pages = [page.removeprefix("docs/") for page in DOC_PAGES if page.startswith("docs/")]
    assert sorted(nav) == sorted(pages), "add the page to mkdocs.yml's nav"
