"""lint --fix: a stage after lint's decision. For each target that fails or warns, the fix that sizes /dev/shm or
memory (never a loader change, never the host's IPC) is written into its file by the editor of its format
(editors.py) on a round-trip parse (ruamel.yaml keeps comments, order and quoting; JSON keeps its indent); the change
is placed back line for line (patch.py) and the result parsed again before anything is written. What is not
written is said with why, and the fix is printed instead."""

from __future__ import annotations

import gc
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from .. import fixes
from ..errors import UsageError
from ..model import Facts, Fix, Report
from ..probe import azureml, ci, compose, devcontainer, documents, ecs, jenkins, kserve, kubernetes, quadlet, shell
from ..probe.runargs import Arg
from ..render import forms
from ..reports import Lint
from . import editors, inplace, matching, write
from .patch import Unpatchable, patch

# Forms --fix shows and does not write, with why.
SHOWN = {
    "terraform": "Terraform's HCL is not rewritten: its expressions, modules and formatting would not survive it",
    "cloudformation": "a CloudFormation template is not rewritten: a value may come from a Parameter, a Mapping or "
    "an !If, set where it comes from",
    "nomad": "a Nomad job's HCL is not rewritten: its variables and templates would not survive it",
    "kfp": "a compiled Kubeflow pipeline is not rewritten: it is compiled from its Python, where the change goes",
    "vertex": "a Vertex AI file is not rewritten: a CustomJob has no /dev/shm setting, and a Model's containerSpec is "
    "immutable (upload the model again with the change)",
}


@dataclass(frozen=True)
class FileFix:
    path: str
    before: str
    after: str
    written: tuple[str, ...]  # 'target: what was written'
    printed: tuple[str, ...]  # 'target: why it was not, and the fix in the file's words'
    refused: str = ""  # why the file is not written at all (a link out of the paths given, a change since lint)

    def diff(self) -> str:
        before, after = self.before.splitlines(keepends=True), self.after.splitlines(keepends=True)
        name = self.path.lstrip("/")
        lines = matching.unified_diff(before, after, f"a/{name}", f"b/{name}")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while --fix runs: the parses, copies and reports of a run make no cycle, and
    the collector's full passes over them grew with the file (10x the services took 11.2-13.6x the time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def sizing(report: Report) -> Fix | None:
    """What --fix writes for a target: the first fix of each finding that decides its verdict that sizes /dev/shm
    or memory without the host's IPC, the largest of each; None when there is none."""
    shm = memory = 0
    ipc = None
    for finding in report.active:
        if finding.severity == "info":
            continue
        fix = next((f for f in finding.fixes if (f.shm_bytes or f.memory_bytes) and f.ipc != "host"), None)
        if fix is not None:
            shm, memory = max(shm, fix.shm_bytes or 0), max(memory, fix.memory_bytes or 0)
            ipc = ipc or fix.ipc
    facts, need = report.facts, report.requirement
    if not (shm or memory) and facts.runtime == "azureml" and facts.shm.size_bytes is None and need is not None:
        shm = fixes.grow_shm(need.failing_bytes, facts, need.ranks)[0].shm_bytes or 0  # its message asks for one
    if not (shm or memory):
        return None
    return Fix("written by lint --fix", shm_bytes=shm or None, memory_bytes=memory or None, ipc=ipc)


def _why_not(report: Report) -> str:
    """A target with nothing --fix can write: the fix its verdict has instead, said as the file would."""
    top = next((f for f in report.active if f.severity != "info"), None)
    fix = next((x for x in top.fixes if forms.applies(x, report.facts)), None) if top else None
    if fix is None:
        return f"nothing to write: {top.message}" if top else "nothing to write"
    said = forms.line(fix, report.facts)
    return f"no size to write: {fix.summary}" + (f" ({said})" if said != fix.summary else "")


def fix_files(doc: Lint, given: Sequence[str]) -> list[FileFix]:
    """The files of lint's failing and warning targets, each with the change --fix makes to it (not yet written):
    refused where a link reaches it from outside the paths given or it changed since lint read it; a file lint
    read under two names (a link, a hard link) once."""
    by_file: dict[str, list[Report]] = {}
    for report in doc.reports:
        if report.verdict != "ok":
            path = _written_in(report)
            if path == documents.STDIN:
                raise UsageError("lint --fix writes files: give the file, not stdin")
            by_file.setdefault(path, []).append(report)
    out: list[FileFix] = []
    names: dict[tuple[int, int], str] = {}  # a file (device, inode) -> the first name it was read under
    for path, reports in by_file.items():
        if not write.within(path, given):
            out.append(_refused(path, f"a link to {os.path.realpath(path)}, outside the paths given"))
            continue
        try:
            text = documents.text(path)
            status = os.stat(path)
        except (UsageError, OSError) as e:  # gone or unreadable since lint read it
            out.append(_refused(path, getattr(e, "strerror", None) or str(e).removeprefix(f"{path}: ")))
            continue
        if path in doc.digests and documents.digest(text) != doc.digests[path]:
            out.append(_refused(path, "it changed since lint read it"))
            continue
        first = names.setdefault((status.st_dev, status.st_ino), path)
        if first != path:
            out.append(FileFix(path, text, text, (), (f"{path}: the same file as {first}: written once, there",)))
            continue
        out.append(_fix_file(path, text, reports))
    return out


def _written_in(report: Report) -> str:
    """The file a target's fix goes into: a compose set's service where lint placed it (the file that sets the
    value, else its own override), else the file that defines it."""
    target = report.facts.target
    return target.fix_at.file if target.fix_at else target.file or ""


def _refused(path: str, why: str) -> FileFix:
    return FileFix(path, "", "", (), (), refused=why)


def _fix_file(path: str, text: str, reports: list[Report]) -> FileFix:
    written: list[str] = []
    printed: list[str] = []
    todo = []
    for report in reports:
        fix = sizing(report)
        name = report.facts.target.name
        if fix is None:
            printed.append(f"{name}: {_why_not(report)}")
        else:
            todo.append((report, fix))
    after = text
    if todo and SHOWN.get(reports[0].facts.form or ""):
        why = SHOWN[reports[0].facts.form or ""]
        for report, fix in todo:
            said = forms.line(fix, report.facts)
            printed.append(f"{report.facts.target.name}: not written ({why}): change it by hand: {said}")
        todo = []
    if todo:
        try:
            if path.endswith(quadlet.SUFFIX):
                after = _quadlet(text, todo, written, printed)
            elif documents.is_jenkinsfile(path):
                after = _jenkinsfile(path, text, todo, written, printed)
            elif documents.is_script(path):
                after = _script(path, text, todo, written, printed)
            elif devcontainer.is_devcontainer(path):
                after = _devcontainer(path, text, todo, written, printed)
            elif path.endswith(".json"):
                after = _json(path, text, todo, written, printed)
            else:
                after = _yaml(path, text, todo, written, printed)
        except Unpatchable as e:
            names = ", ".join(r.facts.target.name for r, _ in todo)
            printed.append(f"{names}: not written: {e} (the fix is printed in lint's report)")
            written.clear()
            after = text
    if text.count("\n") == text.count("\r\n") > 0:  # a file saved with CRLF: the lines written end as its others
        after = re.sub(r"(?<!\r)\n", "\r\n", after)
    return FileFix(path, text, after, tuple(written), tuple(printed))


def _each(todo: list[tuple[Report, Fix]], written: list[str], printed: list[str], edit) -> None:
    """edit(report, fix) for each target; its lines into `written`, or why not into `printed`."""
    for report, fix in todo:
        name = report.facts.target.name
        try:
            done = edit(report, fix)
        except editors.Refused as e:
            said = "; ".join(s for s in forms.statements(fix, report.facts) if not s.startswith("#"))
            printed.append(f"{name}: not written: {e}" + (f"; the fix: {said}" if said else ""))
            continue
        if done is None:
            printed.append(f"{name}: not found in the file as lint read it")
        else:
            written.append(f"{name}: " + ", ".join(done))


def _editor(docs: list[tuple[int, Any]], path: str, made: set[int]):
    """The edit for one target of a parsed file, found by the name lint gave it (the probes' own walks, each
    document walked once for all its targets: a manifest of 2,000 pods was walked 2,000 times)."""
    found: dict[tuple[str, str], Callable[[Fix, Facts], list[str]]] = {}
    models: list[str] = []  # KServe's InferenceServices of a model: their pod is their ServingRuntime's
    indexed: list[bool] = []

    def index() -> None:
        indexed.append(True)
        for number, body in docs:
            if kserve.is_model_service(body):
                models.append(f"{path}:InferenceService/{kserve.name_of(body)}")
            if kubernetes.is_manifest(body):
                for name, obj, spec, container in kubernetes.placed(documents.Document(path, number, body)):
                    found.setdefault(("kubernetes", name), partial(editors.kubernetes, obj, spec, container, made=made))
            if ecs.is_task_definition(body):
                for kind, label, definition, container in ecs.placed(body):
                    if isinstance(container, dict):
                        found.setdefault(("ecs", f"{path}:{label}"), partial(editors.ecs, kind, definition, container))
            if ci.is_workflow(body):
                for label, holder, key, _, _ in ci.placed(body, path):
                    found.setdefault(
                        ("github-actions", f"{path}:{label}"), partial(editors.github_actions, holder, key)
                    )
            if azureml.is_job(body):
                for label, job in azureml.placed(body):
                    found.setdefault(("azureml", f"{path}:{label}"), partial(editors.azureml, job))

    def edit(report: Report, fix: Fix) -> list[str] | None:
        facts, name = report.facts, report.facts.target.name
        if facts.runtime == "compose":
            for _, body in docs:
                if compose.is_compose(body):
                    service = facts.target.fix_at.name if facts.target.fix_at else name[len(path) + 1 :]
                    if service in body["services"]:
                        return editors.compose(body["services"], service, fix, facts)
            return None
        if facts.form == "gitlab-runner" and docs:
            raise editors.Refused("GitLab's jobs cannot size /dev/shm: the runner's config.toml does")
        if ci.RUN_LABEL.search(name) and any(ci.is_gitlab(body, path) for _, body in docs):
            raise editors.Refused("a docker run of a GitLab job's script: give the flag in the script")
        if not indexed:
            index()
        if facts.runtime == "kubernetes" and ":TrainJob/" in name:  # its pod is its runtime's (probe/trainjob.py)
            raise editors.Refused("a TrainJob's pod is its runtime's: add the volume in its spec.runtimePatches")
        if facts.runtime == "kubernetes" and any(name == m or name.startswith(f"{m}/") for m in models):
            raise editors.Refused("a model's pod is its ServingRuntime's: size the volume there (or in the predictor)")
        kind = (
            "ecs"
            if facts.runtime in ("ecs", "batch")
            else facts.form
            if facts.form == "github-actions"
            else facts.runtime
        )
        write = found.get((kind or "", name))
        return write(fix, facts) if write else None

    return edit


def _yaml(path: str, text: str, todo, written: list[str], printed: list[str]) -> str:
    said: tuple[list[str], list[str]] = ([], [])
    out = inplace.rewrite(text, path, lambda docs: _each(todo, *said, _editor(docs, path, set())))
    if out is not None:  # scalars replaced and keys added in place: no round trip
        written += said[0]
        printed += said[1]
        return out
    from ruamel.yaml import YAML, YAMLError  # lazy: only --fix writes YAML

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 20  # never wrap a long line the file has on one
    indent, dash = inplace.indents(text)
    yaml.indent(mapping=indent, sequence=dash + 2, offset=dash)
    try:
        bodies = list(yaml.load_all(text))
    except YAMLError as e:  # ruamel is stricter than the reading (duplicate keys): the file stays as it is
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise Unpatchable(f"it cannot be parsed for writing: {problem}") from None
    yaml.explicit_start = text.lstrip().startswith("---")
    before = _dump(yaml, bodies)
    _each(todo, written, printed, _editor(list(enumerate(bodies)), path, set()))
    after = _dump(yaml, bodies)
    out = patch(text, before, after)
    _same(documents.parse(out, path), documents.parse(after, path))
    return out


def _dump(yaml: Any, bodies: list) -> str:
    stream = io.StringIO()
    yaml.dump_all(bodies, stream)
    return stream.getvalue()


def _json(path: str, text: str, todo, written: list[str], printed: list[str]) -> str:
    body = json.loads(text)
    second = next((line for line in text.splitlines()[1:] if line.strip()), "")
    indent = len(second) - len(second.lstrip()) or 2
    end = "\n" if text.endswith("\n") else ""
    before = json.dumps(body, indent=indent, ensure_ascii=False) + end
    _each(todo, written, printed, _editor([(0, body)], path, set()))
    after = json.dumps(body, indent=indent, ensure_ascii=False) + end
    out = patch(text, before, after)
    _same(documents.parse(out, path), documents.parse(after, path))
    return out


def _quadlet(text: str, todo, written: list[str], printed: list[str]) -> str:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    _each(todo, written, printed, lambda report, fix: editors.quadlet(lines, fix, report.facts))
    return "".join(lines)


def _script(path: str, text: str, todo, written: list[str], printed: list[str]) -> str:
    """Each run command's flag changed in place (or added after `run`), the rest of the script as it is."""
    runs = {f"{path}:{run.line}": run for run in shell.runs(text, path)}
    edits: list[tuple[Arg, str, bool]] = []

    def edit(report: Report, fix: Fix) -> list[str] | None:
        run = runs.get(report.facts.target.name)
        if run is None:
            return None
        made, done = editors.run_args(run.args, fix, report.facts)
        edits.extend(made)
        return done

    _each(todo, written, printed, edit)
    out = editors.apply_args(text, edits, editors.shell_word)
    if len(list(shell.runs(out, path))) != len(runs):
        raise Unpatchable("the script's commands would read differently")
    return out


def _jenkinsfile(path: str, text: str, todo, written: list[str], printed: list[str]) -> str:
    """An agent's args string changed in place, a flag added first in it, or an `args` (a `.inside('...')`) given;
    an `sh` step's docker run as a script's."""
    agents = {f"{path}:{a.line}": a for a in jenkins.agents(text, path)}
    expanded, plain, named = jenkins.steps(text)
    runs = {f"{path}:{r.line}": r for r in shell.runs(text, path, plain)} if plain else {}
    held = {f"{path}:{r.line}" for r in shell.runs(expanded, path, named)} if named else set()
    edits: list[tuple[Arg, str, bool]] = []

    def edit(report: Report, fix: Fix) -> list[str] | None:
        name = report.facts.target.name
        if name in held:
            raise editors.Refused("its docker run is put together from the pipeline's own strings: change it there")
        agent, run = agents.get(name), runs.get(name)
        if agent is None and run is None:
            return None
        made, done = editors.run_args(agent.run if agent else run.args, fix, report.facts)  # type: ignore[union-attr]
        for arg, new, after in made:
            if not after or agent is None:
                edits.append((arg, new, after))
            elif agent.shorthand[0] >= 0:  # dockerfile true -> dockerfile { args '...' }
                edits.append((Arg("true", *agent.shorthand), f"{{ args '{new}' }}", False))
            elif agent.body[0] >= 0:  # first in the args string
                edits.append((Arg("", agent.body[0], agent.body[0]), new + " ", False))
            elif agent.insert_at < 0:
                raise editors.Refused("its args are a Groovy value, not a string in the file: add the flag there")
            elif agent.declarative:  # an args line below the image's
                indent = re.match(r"[ \t]*", text[text.rfind("\n", 0, agent.insert_at) + 1 :]).group(0)  # type: ignore[union-attr]
                edits.append((Arg("", agent.insert_at, agent.insert_at), f"\n{indent}args '{new}'", False))
            elif text[agent.insert_at : agent.insert_at + 1] == ")":  # .inside()
                edits.append((Arg("", agent.insert_at, agent.insert_at), f"'{new}'", False))
            else:  # .inside { ... }
                edits.append((Arg("", agent.insert_at, agent.insert_at), f"('{new}')", False))
        return done

    _each(todo, written, printed, edit)
    out = editors.apply_args(text, edits, lambda word: word)
    if len(list(jenkins.agents(out, path))) != len(agents):
        raise Unpatchable("the Jenkinsfile's agents would read differently")
    return out


def _devcontainer(path: str, text: str, todo, written: list[str], printed: list[str]) -> str:
    """runArgs' strings changed in place, a new one first in the list (or a runArgs key first in the object),
    comments and trailing commas kept; the result read again as the devcontainers CLI would."""
    found = devcontainer.placed(text, path)
    edits: list[tuple[Arg, str, bool]] = []

    def edit(report: Report, fix: Fix) -> list[str] | None:
        made, done = editors.run_args(found.run, fix, report.facts)
        edits.extend(made)
        return done

    _each(todo, written, printed, edit)
    added = [new for _, new, after in edits if after]
    kept = [e for e in edits if not e[2]]
    out = editors.apply_args(text, kept, json.dumps)
    if added and found.listed:  # after the `[`: the list's first arguments, on a line of their own in a long list
        at = found.run.at.end
        rest = devcontainer.plain_json(out)[at:]
        lines = re.match(r"[ \t]*\n([ \t]*)(?!\])", rest)
        said = ", ".join(map(json.dumps, added))
        if lines:
            out = out[:at] + f"\n{lines.group(1)}{said}," + out[at:]
        else:
            out = out[:at] + said + ("" if re.match(r"\s*\]", rest) else ", ") + out[at:]
    elif added:  # a runArgs key first in the object, indented as its keys are
        at = found.run.at.end
        key = f'\n{found.indent}"runArgs": [' + ", ".join(map(json.dumps, added)) + "],"
        out = out[:at] + key + out[at:]
    before = devcontainer.load(text, path)
    after = devcontainer.load(out, path)
    before.pop("runArgs", None)
    if after.pop("runArgs", None) is None or after != before:
        raise Unpatchable("the file would read differently beside its runArgs")
    return out


def _same(written: list, meant: list) -> None:
    if [d.body for d in written] != [d.body for d in meant]:
        raise Unpatchable("the file's own layout would change what the lines mean")


def written(change: FileFix) -> str:
    """The change written into its file (edit/write.py); '' when done, else why it was not (the file as it was)."""
    if change.refused:
        return change.refused
    try:
        write.write(change.path, change.before, change.after)
    except write.NotWritten as e:
        return str(e)
    return ""
