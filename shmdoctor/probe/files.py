"""lint's inputs -> the targets they define, whatever the format; what holds none is passed over, with why.

A directory of a real repository holds more than workloads (`kustomization.yaml`, `package-lock.json`, a chart's
`values.yaml`, Go templates): such a file is passed over with a note and the rest is judged. Bad input is still
exit 2: a file that cannot be read, a bad value in a file that is a workload definition, or inputs of which none
could be read as one. An unrendered Helm template is said as one, with how to render it.
"""

from __future__ import annotations

import os
import re
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .. import suppress
from ..errors import UsageError
from . import (
    azureml,
    ci,
    cloudformation,
    compose,
    compose_sets,
    devcontainer,
    documents,
    ecs,
    jenkins,
    kfp,
    kserve,
    kubernetes,
    nomad,
    quadlet,
    shell,
    skypilot,
    terraform,
    trainjob,
    vertex,
)
from .documents import Definition, Document

FORMATS = (
    "a compose file (services:), a Kubernetes manifest (apiVersion, kind), an ECS task or Batch job definition "
    "(containerDefinitions, containerProperties), an Azure ML job ($schema, command), a compiled Kubeflow pipeline "
    "(deploymentSpec, pipelineInfo), a Vertex AI CustomJob or Model (workerPoolSpecs, containerSpec) or a Quadlet "
    ".container unit"
    " (Argo and Tekton objects are Kubernetes manifests)"
)
# A Go template action: {{ .Values.x }}, {{- include "x" . }}, {{ if ... }}, {{ $x := ... }}
RENDER = "helm template CHART | shmdoctor lint -"
_TEMPLATE = re.compile(r"\{\{-?\s*(?:[.$]|[a-z]+\b)")
_PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]{0,100}(?:[:?+=-][^}\n]{0,200})?\}")
_COMPOSE = re.compile(r"^services:", re.M)
# A top-level key of a format lint reads: a file with one that does not parse is bad input, not another format
_CLAIMED = re.compile(
    r'^(?:services|apiVersion|kind|jobs|containerDefinitions|containerProperties|deploymentSpec|workerPoolSpecs):|"(?:'
    r"apiVersion|kind|services|containerDefinitions|containerProperties|taskDefinition|jobDefinitions|deploymentSpec|"
    r'workerPoolSpecs)"\s*:',
    re.M,
)


@dataclass
class Inputs:
    definitions: list[Definition] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)  # 'file:Kind/name' of manifests' objects without a pod
    files: list[str] = field(default_factory=list)  # 'file[:line]: why' of what defines nothing to judge
    sources: list[str] = field(default_factory=list)  # the files read as definitions
    errors: list[str] = field(default_factory=list)  # 'file[:line]: why' of a file that could not be judged
    digests: dict[str, str] = field(default_factory=dict)  # each file's text as read (documents.digest)
    trainjobs: list[Document] = field(default_factory=list)  # judged once every runtime of the run is read
    runtimes: dict[tuple[str, str], dict] = field(default_factory=dict)  # (kind, name) -> a Trainer runtime
    models: list[Document] = field(default_factory=list)  # KServe InferenceServices of a model: judged at the end
    serving_runtimes: dict[tuple[str, str], Document] = field(default_factory=dict)  # (kind, name) -> its document


def helm_hint(text: str, source: str) -> str | None:
    """An unrendered Helm template, with the line of its first action; None when the text has none."""
    match = _TEMPLATE.search(text)
    if match is None:
        return None
    line = text.count("\n", 0, match.start()) + 1
    return f"{source}:{line}: an unrendered Helm template ({{{{ ... }}}}): render it first: {RENDER}"


def placeholder_hint(text: str, source: str) -> str | None:
    """${VAR} placeholders in a file that is not compose's (compose interpolates its own): a template for envsubst
    or a deploy script, with the line of the first; None when there is none, or when the file would not parse once
    rendered either (rendering is then no remedy)."""
    match = _PLACEHOLDER.search(text)
    if match is None or _COMPOSE.search(text):
        return None
    try:
        documents.parse(_PLACEHOLDER.sub("0", text), source)
    except UsageError:
        return None
    line = text.count("\n", 0, match.start()) + 1
    name = "FILE" if source == documents.STDIN else source
    return (
        f"{source}:{line}: a template with ${{VAR}} placeholders: render it first: envsubst < {name} | shmdoctor lint -"
    )


def _unknown(doc: Document) -> str:
    """Why a parsed document is not judged: a chart's values, or another format."""
    if os.path.basename(doc.source) in ("values.yaml", "values.yml") and os.path.exists(
        os.path.join(os.path.dirname(doc.source), "Chart.yaml")
    ):
        return f"{doc.source}: a Helm chart's values: render the chart: {RENDER}"
    if ci.is_workflow(doc.body):
        return f"{doc.source}: a GitHub Actions workflow with no job container: its jobs run on the runner itself"
    if ci.is_gitlab(doc.body, doc.source):
        return f"{doc.source}: a GitLab CI file with no job of its own (its jobs come from its include:)"
    document = f" (document {doc.index + 1})" if doc.index else ""
    if cloudformation.is_template(doc.body):
        return f"{doc.source}: a CloudFormation template without {' or '.join(cloudformation.KINDS)}"
    return f"{documents.where(doc.source, doc.body)}: not {FORMATS}{document}"


class _Environments:
    """compose's variables for a file: this environment over the env file (--env-file, else `.env` beside the file,
    or in the working directory for stdin), each env file read once."""

    def __init__(self, env_file: str | None):
        self.env_file = env_file
        self.read: dict[str, dict[str, str]] = {}
        if env_file is not None:  # the command line's: bad input for every file, said once before any is read
            self(env_file)

    def __call__(self, source: str) -> Mapping[str, str]:
        directory = os.getcwd() if source == documents.STDIN else os.path.dirname(source) or "."
        path = self.env_file or os.path.join(directory, ".env")
        if path not in self.read:
            given = self.env_file is not None or os.path.isfile(path)
            self.read[path] = compose.parse_env_file(documents.text(path), path) if given else {}
        return ChainMap(os.environ, self.read[path])


def _definitions(
    doc: Document, swarm: bool | None, environ: _Environments, into: Inputs, sets: compose_sets.Sets | None = None
) -> bool:
    """The document's targets into `into`; False when it is no format lint knows."""
    if azureml.is_job(doc.body):  # first: a job's `services:` (Jupyter, TensorBoard) are no compose services
        into.definitions.extend(azureml.probe(doc))
    elif ci.is_gitlab(doc.body, doc.source):  # before compose: a GitLab file's `include:` is no compose include
        found = ci.probe_gitlab(doc)
        into.definitions.extend(found)
        return bool(found)  # no job of its own (all in its include:): _unknown says so
    elif compose.is_compose(doc.body):
        sets = sets or compose_sets.Sets()
        _compose(sets.single(doc), swarm, environ, into, sets)
    elif ecs.is_task_definition(doc.body):
        into.definitions.extend(ecs.probe(doc))
    elif cloudformation.is_template(doc.body):
        found, passed_over = cloudformation.probe(doc)
        into.definitions.extend(found)
        into.objects.extend(f"{doc.source}:{name}" for name in passed_over)
        return bool(found or passed_over)  # else: a template of other resources, passed over as one (_unknown)
    elif ci.is_workflow(doc.body):
        found = ci.probe_workflow(doc)
        into.definitions.extend(found)
        return bool(found)  # no job container: its jobs run on the runner (_unknown says so)
    elif skypilot.is_task(doc.body):
        into.definitions.extend(skypilot.probe(doc))
    elif vertex.is_vertex(doc.body):
        into.definitions.extend(vertex.probe(doc))
    elif trainjob.is_trainjob(doc.body):
        into.trainjobs.append(doc)  # its runtime may come in a later file
    elif kserve.is_model_service(doc.body):
        into.models.append(doc)  # so may a model's ServingRuntime
        into.definitions.extend(kubernetes.probe(kserve.other_components(doc))[0])  # a transformer, an explainer
    elif kubernetes.is_manifest(doc.body):
        meta = doc.body.get("metadata")
        name = str(meta.get("name")) if isinstance(meta, dict) else "?"
        if trainjob.is_runtime(doc.body):
            into.runtimes[(doc.body["kind"], name)] = doc.body
        if kserve.is_runtime(doc.body):
            into.serving_runtimes[(doc.body["kind"], name)] = doc
        found, skipped = kubernetes.probe(doc)
        into.definitions.extend(found)
        into.objects.extend(f"{doc.source}:{name}" for name in skipped)
    else:
        return False
    return True


def _compose(
    loaded: compose_sets.Loaded, swarm: bool | None, environ: _Environments, into: Inputs, sets: compose_sets.Sets
) -> None:
    """A compose file or set, read as one document: one definition per service, as compose would run it."""
    in_set = compose.InSet(loaded.files, loaded.read, loaded.homes, sets.shared)
    into.definitions.extend(compose.probe(loaded.document, swarm, environ, in_set))
    into.sources.extend(f for f in loaded.read[1:] if f not in into.sources)


def read(
    paths: list[str],
    swarm: bool | None = None,
    env_file: str | None = None,
    scripts: bool = True,
    compose_files: tuple[str, ...] = (),
) -> Inputs:
    """Every target of every input (files, directories, '-'), and what was passed over; compose files in sets, as
    compose reads them (probe/compose_sets: a folder's default files, COMPOSE_FILE, `compose_files` as `-f`). One
    input that is a file: UsageError (exit 2) when it cannot be read or holds a bad value in a definition. Several,
    or a directory: such a file is one of `errors` and every other file is judged (as ruff and eslint do).
    UsageError too when no input defines anything and none was in error."""
    out, environ, sets = Inputs(), _Environments(env_file), compose_sets.Sets(compose_files)
    inputs = len(paths) + bool(compose_files)
    single = inputs == 1 and (not paths or paths[0] == "-" or not os.path.isdir(paths[0]))
    found = []
    for path in paths:
        try:
            found.append((path, list(documents.files(path, scripts))))
        except UsageError as e:  # no such path, an empty or too deep directory
            if inputs == 1:
                raise
            out.errors.append(str(e))
    try:
        units = sets.plan(found)
    except UsageError as e:  # a COMPOSE_FILE naming no file
        if single:
            raise
        out.errors.append(str(e))
        units = [name for _, names in found for name in names]
    for unit in units:
        before = len(out.definitions), len(out.objects), len(out.files), len(out.sources)
        try:
            if isinstance(unit, compose_sets.ComposeSet):
                _compose(sets.load(unit.files), swarm, environ, out, sets)
                out.definitions[before[0] :] = _ignoring_in_set(out.definitions[before[0] :])
                out.sources.append(unit.files[0])
            else:
                _read_file(unit, swarm, environ, out, sets, named=unit in paths)
        except UsageError as e:
            if single:
                raise
            del out.definitions[before[0] :], out.objects[before[1] :], out.files[before[2] :]
            del out.sources[before[3] :]
            out.errors.append(str(e))
    _trainjobs(out, single)
    _models(out, single)
    if out.errors:
        return out
    if not out.sources:
        raise UsageError(_nothing(out.files))
    if not out.definitions and not out.objects:  # `kubectl get pods -o json` of no pod: never "0 services ... ok"
        if out.trainjobs or out.models:  # why its TrainJob or model was not judged
            raise UsageError(_nothing(out.files))
        raise UsageError(f"{', '.join(out.sources)}: no service, workload or object in it: nothing to judge")
    return out


def _trainjobs(out: Inputs, single: bool) -> None:
    """Each TrainJob judged as its runtime's trainer pod (this run's runtime, else the one Kubeflow ships)."""
    for doc in out.trainjobs:
        pod, note = trainjob.resolve(doc, out.runtimes)
        if pod is None:
            out.files.append(note)
            continue
        try:
            found, _ = kubernetes.probe(pod)
        except UsageError as e:
            if single:
                raise
            out.errors.append(str(e))
            continue
        out.definitions.extend(trainjob.renamed(found, doc, note))


def _models(out: Inputs, single: bool) -> None:
    """Each KServe model judged as the pod its ServingRuntime makes (this run's, by name or as KServe selects)."""
    for doc in out.models:
        pod, note, place = kserve.resolve(doc, out.serving_runtimes)
        if pod is None:
            out.files.append(note)
            continue
        try:
            found, _ = kubernetes.probe(pod)
        except UsageError as e:
            if single:
                raise
            out.errors.append(str(e))
            continue
        out.definitions.extend(kserve.renamed(found, doc, note, place))


def _read_file(
    name: str, swarm: bool | None, environ: _Environments, out: Inputs, sets: compose_sets.Sets, named: bool = True
) -> None:
    """One file's targets into `out`, or why it is passed over; UsageError when it cannot be judged. A script found
    in a folder with no run command in it is passed over unsaid (`named`: given on the command line, it is said)."""
    source = documents.STDIN if name == "-" else name
    if source.endswith(documents.TEMPLATES):  # compose.yml.j2, task.json.tpl: said to be rendered first
        out.files.append(f"{source}: a template ({os.path.splitext(source)[1]}): render it first, then lint the result")
        return
    text = documents.text(name)
    out.digests[source] = documents.digest(text)
    first = len(out.definitions)
    _read_text(text, source, name, swarm, environ, out, sets, named)
    out.definitions[first:] = ignoring(out.definitions[first:], text, source)


def ignoring(definitions: list[Definition], text: str, source: str) -> list[Definition]:
    """Each definition with the rules it ignores: its `# shmdoctor: ignore=` comment (on its line or the line
    above) or its shmdoctor.ignore label; UsageError where one names a rule that does not exist."""
    lines = text.splitlines()
    return [
        replace(
            d,
            ignore=suppress.in_source(
                lines if d.facts.target.file == source else [], d.facts.target.line, d.ignore_label, source
            ),
        )
        for d in definitions
    ]


def _ignoring_in_set(definitions: list[Definition]) -> list[Definition]:
    """ignoring() for a compose set's services, each at the file and line that defines it (a file read once)."""
    texts: dict[str, str] = {}
    out = []
    for d in definitions:
        file = d.facts.target.file or ""
        if file and file != documents.STDIN and file not in texts:
            texts[file] = documents.text(file)
        out += ignoring([d], texts.get(file, ""), file)
    return out


def _read_text(
    text: str,
    source: str,
    name: str,
    swarm: bool | None,
    environ: _Environments,
    out: Inputs,
    sets: compose_sets.Sets,
    named: bool,
) -> None:
    before = len(out.definitions), len(out.objects)
    if source.endswith(nomad.SUFFIXES):  # HCL: a job's docker tasks
        found, passed_over = nomad.read(text, source)
        out.definitions.extend(found)
        out.files.extend(passed_over if passed_over or found else [f"{source}: no docker task in this job file"])
        out.sources.extend([source] if found else [])
        return
    if source.endswith(terraform.SUFFIXES):  # HCL, or Terraform's JSON syntax
        found, passed_over = terraform.read(text, source)
        out.definitions.extend(found)
        out.files.extend(passed_over)
        out.sources.extend([source] if found else [])
        if not found and not passed_over:
            out.files.append(f"{source}: no resource that runs a container ({terraform.RESOURCES})")
        return
    if source.endswith(quadlet.SUFFIX) or (source == documents.STDIN and quadlet.is_unit(text)):  # INI, not YAML
        out.definitions.extend(quadlet.probe(text, source))
        out.sources.append(source)
        return
    if (
        documents.is_jenkinsfile(source)
        or documents.is_script(name)
        or (source == documents.STDIN and text.startswith("#!") and "\n" in text)
    ):
        found = (jenkins.probe if documents.is_jenkinsfile(source) else shell.probe)(text, source)
        if found:
            out.definitions.extend(found)
            out.sources.append(source)
        elif named:
            out.files.append(f"{source}: a script with no docker, podman or nerdctl run command")
        return
    if devcontainer.is_devcontainer(source):
        found, why = devcontainer.probe(text, source)
        out.definitions.extend(found)
        out.sources.extend([source] if found else [])
        out.files.extend([why] if why else [])
        return
    if source.endswith(quadlet.POD_SUFFIX):  # read where a .container names it; a bad one is said here too
        quadlet.parse(text, source, "Pod")
        out.files.append(
            f"{source}: a Quadlet .pod unit: its /dev/shm is judged with the .container units that name it (Pod=)"
        )
        return
    try:
        parsed = documents.parse(text, source, unknown_tags=cloudformation.looks_like(text))
        pipeline = any(kfp.is_pipeline(doc.body) for doc in parsed)  # its PlatformSpec is the next document
        unknown = [] if pipeline else [_unknown(d) for d in parsed if not _definitions(d, swarm, environ, out, sets)]
    except UsageError as e:  # not YAML, or a bad value: a template's placeholders, else bad input
        hint = helm_hint(text, source) or placeholder_hint(text, source)
        if hint is None and (not isinstance(e, documents.Unparsable) or _CLAIMED.search(text)):
            raise  # a definition lint reads (its keys say so) that does not parse: bad input, the others judged
        del out.definitions[before[0] :], out.objects[before[1] :]
        out.files.append(hint or str(e))
        return
    if pipeline:  # its {{$.inputs...}} are KFP's placeholders: a bad value is bad input, never a template
        _pipeline(parsed, source, out)
    elif len(unknown) < len(parsed):
        out.sources.append(source)
        out.files.extend(unknown)
    else:  # the file as a whole: why a chart's template is not judged, or the first reason
        # ({{ }} alone is no chart: Prometheus rules and Go templates of other tools use it too)
        chart = "templates" in os.path.normpath(source).split(os.sep)
        hint = helm_hint(text, source) if chart or not unknown else None
        out.files.append(hint or (unknown[0] if unknown else f"{source}: empty"))


def _pipeline(parsed: list[Document], source: str, out: Inputs) -> None:
    """A compiled Kubeflow pipeline: each executor judged as the pod KFP's driver makes for it (probe/kfp.py)."""
    found = kfp.pods(parsed)
    for pod, label, line, notes in found:
        definitions, _ = kubernetes.probe(pod)
        out.definitions.extend(kfp.renamed(definitions, source, label, line, notes))
    if found:
        out.sources.append(source)
    else:
        out.files.append(f"{source}: a Kubeflow pipeline with no container executor (importers, resolvers run none)")


def _nothing(passed_over: list[str]) -> str:
    if len(passed_over) == 1:
        return passed_over[0]
    return f"nothing to judge in {len(passed_over)} files: " + "; ".join(passed_over)
