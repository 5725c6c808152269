"""CI container jobs -> the Facts of each container they start.

**GitHub Actions**: a job's `container:` (an image, or `image` with `options`, `env`) and each of its `services:`
run as `docker create {options} image` on the runner: `options` is docker's flags in one string, read as the engine
reads them (runargs.py), a `${{ ... }}` expression unknown. A job without a container runs on the runner itself.

**GitLab CI**: `.gitlab-ci.yml` names each job's image (`image:`, `default: image:`, through `extends:`) and its
`services:`, but not /dev/shm: that is the runner's (the Docker executor's `[runners.docker] shm_size` in its
config.toml, 0 by default: the engine's 64 MiB; the Kubernetes executor's pod: the runtime's 64 MiB). A job is
judged at that default, and the note says what the file cannot tell; its fix is said for the runner's config.toml.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..errors import UsageError
from ..model import Target
from .documents import Definition, Document, line_of
from .runargs import Arg, RunArgs, facts, parse
from .shell import words

GITLAB_NAMES = (".gitlab-ci.yml", ".gitlab-ci.yaml")
_GITLAB_KEYWORDS = frozenset(
    ("default", "include", "stages", "variables", "workflow", "image", "services", "before_script", "after_script",
     "cache", "spec")
)  # fmt: skip
GITLAB_NOTE = (
    "assumed the runner's /dev/shm: .gitlab-ci.yml does not set it (the Docker executor's [runners.docker] "
    "shm_size in config.toml, 0 by default: the engine's 64 MiB; the Kubernetes executor's pod: 64 MiB)"
)
MAX_EXTENDS = 16  # extends: followed this deep


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


def _image(job: dict, body: dict, seen: int = 0) -> str | None:
    """A GitLab job's image: its own, its `extends:`' (the last template that has one), or the default."""
    image = job.get("image")
    if isinstance(image, dict):
        image = image.get("name")
    if isinstance(image, str):
        return image
    parents = job.get("extends")
    for parent in reversed([parents] if isinstance(parents, str) else parents if isinstance(parents, list) else []):
        template = body.get(parent)
        if isinstance(template, dict) and seen < MAX_EXTENDS:
            found = _image(template, body, seen + 1)
            if found:
                return found
    default = body.get("default")
    return _image(default, {}, MAX_EXTENDS) if isinstance(default, dict) and default is not job else None


def probe_gitlab(doc: Document) -> list[Definition]:
    """One Definition per job that runs (hidden `.templates` do not), at the runner's default /dev/shm."""
    out = []
    for name, job in doc.body.items():
        if not isinstance(job, dict) or name in _GITLAB_KEYWORDS or str(name).startswith("."):
            continue
        if "script" not in job and "extends" not in job:
            continue
        script = job.get("script")
        lines = [str(s) for s in script] if isinstance(script, list) else [str(script or "")]
        run = parse([], "docker", Arg("script"), image=False)
        run.command = [Arg(line) for line in lines]
        target = Target("container", f"{doc.source}:{name}", file=doc.source, line=line_of(job))
        read = facts(run, target, assumed_image=_image(job, doc.body), form="gitlab-runner")
        at = f"{doc.source}:{name}"
        out.append(Definition(read.facts, read.loader_spec, at, notes=(GITLAB_NOTE,), ignore_label=read.ignore_label))
    return out
