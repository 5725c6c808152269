"""CI container jobs -> the Facts of each container they start.

**GitHub Actions**: a job's `container:` (an image, or `image` with `options`, `env`) and each of its `services:`
run as `docker create {options} image` on the runner: `options` is docker's flags in one string, read as the engine
reads them (runargs.py), a `${{ ... }}` expression unknown. A job without a container runs on the runner itself.

**GitLab CI**: `.gitlab-ci.yml` names each job's image (`image:`, `default: image:`, through `extends:`) and its
`services:`, but not /dev/shm: that is the runner's (the Docker executor's `[runners.docker] shm_size` in its
config.toml, 0 by default: the engine's 64 MiB; the Kubernetes executor's pod: the runtime's 64 MiB). A job is
judged at that default, and the note says what the file cannot tell; its fix is said for the runner's config.toml.
Each `docker run` its script starts (`before_script` and `script`, through `extends:`, YAML anchors and `!reference`
tags, as GitLab merges them) is a container of its own, read as a script's with the pipeline's variables (global and
the job's: the shell's environment, `$$` a `$`) put in, `$(echo ...)` and `$(eval echo ...)` of them as their words;
its fix is printed (the flag in the script), not written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from ..limits import MAX_SCRIPT_BYTES
from ..model import Target
from . import shell
from .documents import GITLAB_NAMES, GITLAB_REFERENCE, Definition, Document, Tagged, line_of
from .runargs import Arg, RunArgs, facts, parse
from .shell import words

_GITLAB_KEYWORDS = frozenset(
    ("default", "include", "stages", "variables", "workflow", "image", "services", "before_script", "after_script",
     "cache", "spec")
)  # fmt: skip
GITLAB_NOTE = (
    "assumed the runner's /dev/shm: .gitlab-ci.yml does not set it (the Docker executor's [runners.docker] "
    "shm_size in config.toml, 0 by default: the engine's 64 MiB; the Kubernetes executor's pod: 64 MiB)"
)
MAX_EXTENDS = 16  # extends: followed this deep
MAX_REFERENCES = 10  # !reference tags resolved this deep (GitLab's own limit)
_GLOBALS = ("image", "before_script", "services")  # a job's when it has none: default:'s, else the file's top level
_VARIABLE = re.compile(r"\$\$|\$\{(\w+)\}|\$(\w+)")
RUN_LABEL = re.compile(r"/docker-run-\d+$")  # a job's docker run: <file>:<job>/docker-run-N
_ECHOED = re.compile(r"\$\((?:\s*eval)?\s*echo\s+")  # $(echo words), $(eval echo words): the words


def is_workflow(body: Any) -> bool:
    """A GitHub Actions workflow: `on:` (YAML 1.1 reads it as true) and a mapping of jobs."""
    return isinstance(body, dict) and isinstance(body.get("jobs"), dict) and ("on" in body or True in body)


def is_gitlab(body: Any, source: str) -> bool:
    """A GitLab CI file: by its name, or top-level jobs with a `script` beside `stages`."""
    if not isinstance(body, dict) or "kind" in body or "apiVersion" in body:
        return False
    if os.path.basename(source).endswith(GITLAB_NAMES):
        return True
    return "stages" in body and any(isinstance(v, dict) and "script" in v for v in body.values())


def options_args(options: str, at: str) -> list[Arg]:
    """A container's `options` string as docker's arguments (quotes, `${{ ... }}` unknown), placed in the string."""
    if not isinstance(options, str):
        raise UsageError(f"{at}: options must be a string of docker flags")
    return words(options, at)


def placed(body: dict, source: str) -> Iterator[tuple[str, dict, str, RunArgs, str | None]]:
    """(name, the mapping that holds it, its key there, its run arguments, its image) for each GitHub Actions job
    container (`container:`, an image or a mapping) and service."""
    for job_name, job in body["jobs"].items():
        if not isinstance(job, dict):
            continue
        if job.get("container") is not None:
            yield _container(str(job_name), job, "container", source)
        services = job.get("services")
        if isinstance(services, dict):
            for name, service in services.items():
                if isinstance(service, (dict, str)):
                    yield _container(f"{job_name}/{name}", services, name, source)


def _container(name: str, holder: dict, key: str, source: str) -> tuple[str, dict, str, RunArgs, str | None]:
    spec = holder[key]
    mapping = spec if isinstance(spec, dict) else {}
    image = spec if isinstance(spec, str) else mapping.get("image")
    options = mapping.get("options")
    args = options_args(options, f"{source}: jobs.{name}") if options is not None else []
    env = mapping.get("env")
    args += [a for k, v in (env.items() if isinstance(env, dict) else []) for a in (Arg("-e"), Arg(f"{k}={v}"))]
    run = parse(args, "docker", Arg("options", 0, 0), image=False)
    return name, holder, key, run, image if isinstance(image, str) else None


def probe_workflow(doc: Document) -> list[Definition]:
    """One Definition per job container and service; a job on the runner itself is none."""
    out = []
    for name, holder, key, run, image in placed(doc.body, doc.source):
        node = holder[key] if isinstance(holder[key], dict) else holder
        target = Target("container", f"{doc.source}:{name}", file=doc.source, line=line_of(node))
        try:
            read = facts(run, target, assumed_image=image, form="github-actions")
        except UsageError as e:
            raise UsageError(f"{doc.source}: jobs.{name}: {e}") from None
        out.append(Definition(read.facts, read.loader_spec, f"{doc.source}:{name}", ignore_label=read.ignore_label))
    return out


def _merged(job: dict, body: dict, templates: dict[str, dict], seen: int = 0) -> dict:
    """A job as GitLab runs it: its `extends:` templates merged in order under its own keys (mappings key by key,
    lists and values replaced), then default:'s (or the top level's) image, before_script and services where it
    has none. `templates`: each template merged once for the file."""
    names = job.get("extends")
    out: dict = {}
    for parent in [names] if isinstance(names, str) else names if isinstance(names, list) else []:
        template = body.get(parent) if isinstance(parent, str) else None
        if isinstance(template, dict) and seen < MAX_EXTENDS:
            if parent not in templates:
                templates[parent] = _merged(template, body, templates, seen + 1)
            _merge(out, templates[parent])
    _merge(out, {k: v for k, v in job.items() if k != "extends"})
    written = body.get("default")
    default: dict = written if isinstance(written, dict) else {}
    for key in _GLOBALS if seen == 0 else ():
        value = default.get(key, body.get(key))
        if key not in out and value is not None:
            out[key] = value
    return out


def _merge(into: dict, over: dict) -> None:
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = dict(into[key])
            _merge(into[key], value)
        else:
            into[key] = value


def _image(job: dict) -> str | None:
    """A merged job's image (a name, or `image: {name: ...}`)."""
    image = job.get("image")
    image = image.get("name") if isinstance(image, dict) else image
    return image if isinstance(image, str) else None


def _lines(value: Any, body: dict, depth: int = 0) -> list[str]:
    """A script's lines: its strings, nested lists flattened and `!reference [job, key]` tags put in, as GitLab
    does (10 levels)."""
    if depth > MAX_REFERENCES:
        return []
    if isinstance(value, Tagged) and value.tag == GITLAB_REFERENCE:
        found: Any = body
        for key in value.value if isinstance(value.value, list) else []:
            found = found.get(key) if isinstance(found, dict) and isinstance(key, str) else None
        return _lines(found, body, depth + 1)
    if isinstance(value, list):
        return [line for item in value for line in _lines(item, body, depth + 1)]
    return [str(value)] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else []


def _variables(*holders: Any) -> dict[str, str]:
    """The pipeline's variables, later holders over earlier ones: a value (or `{value: ...}`) with the variables
    before it put in and `$$` read as `$`, as GitLab expands them."""
    out: dict[str, str] = {}
    for holder in holders:
        for name, value in holder.items() if isinstance(holder, dict) else []:
            value = value.get("value") if isinstance(value, dict) else value
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out[str(name)] = _VARIABLE.sub(lambda m: _put(m, out, "$"), str(value))
    return out


def _put(ref: re.Match, known: dict[str, str], dollars: str) -> str:
    name = ref.group(1) or ref.group(2)
    return dollars if name is None else known.get(name, ref.group(0))


def _echoed(text: str) -> str:
    """`$(echo words)` and `$(eval echo words)` as their words (the parentheses inside them balanced)."""
    out, at = [], 0
    for m in _ECHOED.finditer(text):
        if m.start() < at:
            continue
        depth, end = 1, m.end()
        while end < len(text) and depth:
            depth += (text[end] == "(") - (text[end] == ")")
            end += 1
        if depth:
            break
        out += [text[at : m.start()], text[m.end() : end - 1]]
        at = end
    return "".join([*out, text[at:]])


def _runs(name: str, job: dict, body: dict, doc: Document, budget: list[int]) -> list[Definition]:
    """Each docker run of the job's before_script and script, a container of its own named <file>:<job>/docker-run-N
    (its fix printed: the script is not the file's text). `budget`: the shell text the file may still have read."""
    lines = _lines(job.get("before_script"), body) + _lines(job.get("script"), body)
    if not any("run" in line for line in lines):
        return []
    env = _variables(body.get("variables"), job.get("variables"))
    text = _echoed(_VARIABLE.sub(lambda m: _put(m, env, "$$"), "\n".join(lines)))
    budget[0] -= len(text)
    if budget[0] < 0:
        raise UsageError(f"more than {MAX_SCRIPT_BYTES // 2**20} MiB of job scripts once anchors and variables are in")
    out = []
    for number, run in enumerate(shell.runs(text, doc.source), 1):
        label = f"{name}/docker-run-{number}"
        target = Target("container", f"{doc.source}:{label}", file=doc.source, line=line_of(doc.body.get(name)))
        read = facts(run.args, target)
        out.append(Definition(read.facts, read.loader_spec, f"{doc.source}:{label}", ignore_label=read.ignore_label))
    return out


def probe_gitlab(doc: Document) -> list[Definition]:
    """One Definition per job that runs (hidden `.templates` do not), at the runner's default /dev/shm, and one per
    docker run its script starts."""
    out: list[Definition] = []
    templates: dict[str, dict] = {}
    budget = [MAX_SCRIPT_BYTES]
    for name, written in doc.body.items():
        if not isinstance(written, dict) or name in _GITLAB_KEYWORDS or str(name).startswith("."):
            continue
        if "script" not in written and "extends" not in written:
            continue
        job = _merged(written, doc.body, templates)
        run = parse([], "docker", Arg("script"), image=False)
        run.command = [Arg(line) for line in _lines(job.get("script"), doc.body)]
        target = Target("container", f"{doc.source}:{name}", file=doc.source, line=line_of(written))
        at = f"{doc.source}:{name}"
        try:
            read = facts(run, target, assumed_image=_image(job), form="gitlab-runner")
            runs = _runs(str(name), job, doc.body, doc, budget)
        except UsageError as e:
            raise UsageError(f"{at}: {e}") from None
        out.append(Definition(read.facts, read.loader_spec, at, notes=(GITLAB_NOTE,), ignore_label=read.ignore_label))
        out += runs
    return out
