"""KServe's InferenceService written the current way (`spec.predictor.model`: a modelFormat, an optional runtime)
-> the pod its ServingRuntime or ClusterServingRuntime makes, with the model's fields merged over the runtime's.

Read in kserve/kserve (pkg/controller/v1beta1/inferenceservice: the predictor's pod spec is the runtime's
ServingRuntimePodSpec with the predictor's own pod fields over it; utils.MergeRuntimeContainers merges the model's
container over the runtime's `kserve-container` by strategic merge patch, args concatenated, runtime's first). The
runtime is the one named in `model.runtime`, else the one KServe would select among the runtimes in the same run:
not disabled, `autoSelect` on the supported format of the model's name (and version, where both say one), a
namespaced ServingRuntime before a ClusterServingRuntime, the highest `priority` first. The runtimes KServe ships
are not read: a model whose runtime is not in the run is passed over, saying which file to give.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from ..model import Place
from .documents import Definition, Document, line_of

GROUP = "serving.kserve.io"
KINDS = ("ServingRuntime", "ClusterServingRuntime")
SOURCE = "kserve/kserve MergeRuntimeContainers"
_MODEL_ONLY = ("modelFormat", "runtime", "storageUri", "protocolVersion", "storage")


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _group(body: Any) -> str:
    return str(body.get("apiVersion", "")).rpartition("/")[0] if isinstance(body, dict) else ""


def is_model_service(body: Any) -> bool:
    """An InferenceService whose predictor is a `model` (no container of its own in the file)."""
    if _group(body) != GROUP or body.get("kind") != "InferenceService":
        return False
    return isinstance(_dict(_dict(body.get("spec")).get("predictor")).get("model"), dict)


def is_runtime(body: Any) -> bool:
    return _group(body) == GROUP and body.get("kind") in KINDS


def _name(body: dict) -> str:
    return str(_dict(body.get("metadata")).get("name") or "?")


def _supports(runtime: dict, fmt: dict) -> int | None:
    """The priority with which a runtime would be auto-selected for the model's format, None where it would not."""
    spec = _dict(runtime.get("spec"))
    if spec.get("disabled") is True:
        return None
    name, version = str(fmt.get("name") or "").lower(), fmt.get("version")
    for supported in _list(spec.get("supportedModelFormats")):
        supported = _dict(supported)
        if str(supported.get("name") or "").lower() != name or supported.get("autoSelect") is not True:
            continue
        if version is not None and supported.get("version") not in (None, version):
            continue
        priority = supported.get("priority")
        return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0
    return None


def _runtime(model: dict, runtimes: dict[tuple[str, str], Document]) -> Document | None:
    named = model.get("runtime")
    if isinstance(named, str) and named:
        return runtimes.get(("ServingRuntime", named)) or runtimes.get(("ClusterServingRuntime", named))
    fmt = _dict(model.get("modelFormat"))
    chosen = [
        (kind == "ServingRuntime", priority, doc)
        for (kind, _), doc in runtimes.items()
        if (priority := _supports(doc.body, fmt)) is not None
    ]
    return max(chosen, key=lambda c: (c[0], c[1]))[2] if chosen else None


def _merge_by(own: list, given: list, key: str) -> list:
    """A strategic merge of two lists of mappings by `key`: the given one's items replace the own ones'."""
    given_keys = {_dict(g).get(key) for g in given}
    return [o for o in own if _dict(o).get(key) not in given_keys] + list(given)


def _merged(runtime: dict, model: dict) -> dict:
    """The model's container over the runtime's, as MergeRuntimeContainers merges them."""
    out = copy.deepcopy(runtime)
    for key, value in model.items():
        if key in _MODEL_ONLY or value is None:
            continue
        if key == "args":
            out["args"] = [*_list(runtime.get("args")), *_list(value)]
        elif key == "env":
            out["env"] = _merge_by(_list(runtime.get("env")), _list(value), "name")
        elif key == "volumeMounts":
            out["volumeMounts"] = _merge_by(_list(runtime.get("volumeMounts")), _list(value), "mountPath")
        elif key == "resources":
            own = _dict(runtime.get("resources"))
            out["resources"] = {
                part: {**_dict(own.get(part)), **_dict(_dict(value).get(part))} for part in ("limits", "requests")
            }
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve(doc: Document, runtimes: dict[tuple[str, str], Document]) -> tuple[Document | None, str, Place | None]:
    """(the predictor's pod as a Pod document, a note on where its runtime came from, the runtime's place); (None,
    why, None) where the runtime is not in the run."""
    spec = _dict(doc.body.get("spec"))
    predictor = _dict(spec.get("predictor"))
    model = _dict(predictor.get("model"))
    name = _name(doc.body)
    found = _runtime(model, runtimes)
    if found is None:
        wanted = model.get("runtime") or f"one that auto-selects {_dict(model.get('modelFormat')).get('name')!s}"
        why = f"its runtime ({wanted}) is not in this run: give the ServingRuntime's file too"
        return None, f"{doc.source}:InferenceService/{name}: {why}", None
    runtime = found.body
    pod = copy.deepcopy({k: v for k, v in _dict(runtime.get("spec")).items() if k not in ("supportedModelFormats",)})
    containers = [c for c in _list(pod.get("containers")) if isinstance(c, dict)]
    main = next((c for c in containers if c.get("name") == "kserve-container"), containers[0] if containers else None)
    if main is None:
        return None, f"{doc.source}:InferenceService/{name}: its runtime {_name(runtime)} has no container", None
    pod["containers"] = [_merged(c, model) if c is main else c for c in containers]
    pod["volumes"] = _merge_by(_list(pod.get("volumes")), _list(predictor.get("volumes")), "name")
    for key in ("nodeSelector", "tolerations", "hostIPC"):
        if key in predictor:
            pod[key] = copy.deepcopy(predictor[key])
    kind = runtime.get("kind")
    note = f"run as its runtime {kind}/{_name(runtime)} of this run ({found.source}), the model merged over it"
    place = Place(found.source, line_of(runtime), f"{kind}/{_name(runtime)}: the container that runs")
    pod_doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod}
    return Document(doc.source, doc.index, pod_doc), note, place


def renamed(found: list[Definition], doc: Document, note: str, place: Place) -> list[Definition]:
    """The pod's definitions named as the InferenceService's predictor, at its line, its runtime related."""
    name = _name(doc.body)
    out = []
    for d in found:
        parts = d.facts.target.name[len(doc.source) + 1 :].split("/")  # Pod/NAME[/CONTAINER]
        label = f"{doc.source}:InferenceService/{name}" + (f"/{parts[2]}" if len(parts) > 2 else "")
        target = replace(d.facts.target, name=label, line=line_of(doc.body), related=(place,))
        out.append(replace(d, facts=replace(d.facts, target=target), notes=d.notes + (note,)))
    return out
