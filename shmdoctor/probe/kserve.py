"""KServe's InferenceService written the current way (`spec.predictor.model`: a modelFormat, an optional runtime)
-> the pod its ServingRuntime or ClusterServingRuntime makes, with the model's fields merged over the runtime's.

Read in kserve/kserve (pkg/controller/v1beta1/inferenceservice: the predictor's pod spec is the runtime's
ServingRuntimePodSpec with the predictor's own pod fields over it; utils.MergeRuntimeContainers merges the model's
container over the runtime's `kserve-container` by strategic merge patch, args concatenated, runtime's first). The
runtime is the one named in `model.runtime`, else the one KServe would select among the runtimes in the same run
(pkg/apis/serving/v1beta1/predictor_model.go GetSupportingRuntimes): not disabled, not a ModelMesh runtime
(`multiModel: true`: an InferenceService is served one model a pod), one with a `workerSpec` only for a predictor
with one, a `protocolVersions` list that holds the model's `protocolVersion` (v1 unless it says), `autoSelect` on a
supported format of the model's name (and of its version, where the model says one); a namespaced ServingRuntime
before a ClusterServingRuntime, then a given `priority` (the first of the format's name) before none, the highest
first, then the lowest protocol version, then the name. Where the run has none, the one KServe ships of that name or
choice (SHIPPED: read in kserve/kserve config/runtimes at aaac4e29; the vLLM and Hugging Face servers mount an
unsized memory-backed emptyDir at /dev/shm, the others nothing), said as assumed. A runtime neither in the run nor
shipped is said in one line (the multi-node Hugging Face runtime is not modelled). An InferenceService in ModelMesh's
deployment mode (`serving.kserve.io/deploymentMode: ModelMesh`) has no pod of its own: modelmesh-serving loads it
into the pods of a ServingRuntime with `multiModel: true`, made of that runtime's containers and volumes (its
controllers/modelmesh/runtime.go adds a models-dir emptyDir on disk and its own sidecars), so the runtime's file is
judged as that pod and the model is said in one line.
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
DEPLOYMENT_MODE = "serving.kserve.io/deploymentMode"
_MODEL_ONLY = ("modelFormat", "runtime", "storageUri", "protocolVersion", "storage")


SHIPPED_AT = "kserve/kserve config/runtimes (aaac4e29)"
# name: (auto-selected formats as (name, version, priority), the kserve-container's image, its command, whether it
# mounts a memory-backed emptyDir without sizeLimit at /dev/shm); each limits memory to 2Gi, cpu to 1
SHIPPED: dict[str, tuple[tuple[tuple[str, str, int], ...], str, tuple[str, ...], bool]] = {
    "kserve-tensorflow-serving": (
        (("tensorflow", "1", 2), ("tensorflow", "2", 2)),
        "tensorflow/serving:2.6.2",
        ("/usr/bin/tensorflow_model_server",),
        False,
    ),
    "kserve-sklearnserver": ((("sklearn", "1", 1),), "kserve/sklearnserver:latest", (), False),
    "kserve-mlserver": (
        (
            ("sklearn", "0", 2),
            ("sklearn", "1", 2),
            ("xgboost", "1", 2),
            ("xgboost", "2", 2),
            ("lightgbm", "3", 2),
            ("lightgbm", "4", 2),
            ("mlflow", "1", 1),
            ("mlflow", "2", 1),
        ),
        "docker.io/seldonio/mlserver:1.7.1",
        (),
        False,
    ),  # fmt: skip
    "kserve-xgbserver": ((("xgboost", "2", 1),), "kserve/xgbserver:latest", (), False),
    "kserve-tritonserver": (
        (("tensorrt", "8", 1), ("tensorflow", "1", 1), ("tensorflow", "2", 1), ("onnx", "1", 1), ("triton", "2", 1)),
        "nvcr.io/nvidia/tritonserver:23.05-py3",
        ("tritonserver",),
        False,
    ),
    "kserve-pmmlserver": ((("pmml", "3", 1), ("pmml", "4", 1)), "kserve/pmmlserver:latest", (), False),
    "kserve-paddleserver": ((("paddle", "2", 1),), "kserve/paddleserver:latest", (), False),
    "kserve-lgbserver": ((("lightgbm", "4", 1),), "kserve/lgbserver:latest", (), False),
    "kserve-torchserve": ((("pytorch", "1", 2),), "pytorch/torchserve-kfs:0.9.0", ("torchserve",), False),
    "kserve-huggingfaceserver": (
        (("huggingface", "1", 1),),
        "kserve/huggingfaceserver:latest",
        ("python", "-m", "huggingfaceserver"),
        True,
    ),
    "kserve-autogluonserver": ((("autogluon", "1", 1),), "kserve/autogluonserver:latest", (), False),
    "kserve-vllmserver": (
        (("vLLM", "1", 1),),
        "vllm/vllm-openai:latest",
        ("python", "-m", "vllm.entrypoints.openai.api_server"),
        True,
    ),
}


# name: its protocolVersions (config/runtimes at aaac4e29; vLLM's lists none: any)
PROTOCOLS: dict[str, tuple[str, ...]] = {
    "kserve-tensorflow-serving": ("v1", "grpc-v1"),
    "kserve-sklearnserver": ("v1", "v2"),
    "kserve-mlserver": ("v2",),
    "kserve-xgbserver": ("v1", "v2"),
    "kserve-tritonserver": ("v2", "grpc-v2"),
    "kserve-pmmlserver": ("v1", "v2"),
    "kserve-paddleserver": ("v1", "v2"),
    "kserve-lgbserver": ("v1", "v2"),
    "kserve-torchserve": ("v1", "v2", "grpc-v2"),
    "kserve-huggingfaceserver": ("v2", "v1"),
    "kserve-autogluonserver": ("v1", "v2"),
    "kserve-vllmserver": (),
}
_PROTOCOL_ORDER = {"v1": 1, "v2": 2, "grpc-v1": 3, "grpc-v2": 4}  # constants.GetProtocolVersionInt; else 5


def _shipped(name: str) -> Document:
    """The ClusterServingRuntime KServe ships under that name, as the facts SHIPPED keeps of it."""
    formats, image, command, shm = SHIPPED[name]
    container: dict = {
        "name": "kserve-container",
        "image": image,
        "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
    }
    if command:
        container["command"] = list(command)
    spec: dict = {
        "supportedModelFormats": [{"name": f, "version": v, "autoSelect": True, "priority": p} for f, v, p in formats],
        "containers": [container],
    }
    if PROTOCOLS[name]:
        spec["protocolVersions"] = list(PROTOCOLS[name])
    if shm:
        container["volumeMounts"] = [{"name": "devshm", "mountPath": "/dev/shm"}]
        spec["volumes"] = [{"name": "devshm", "emptyDir": {"medium": "Memory"}}]
    body = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "ClusterServingRuntime", "metadata": {"name": name}}
    return Document(SHIPPED_AT, 0, {**body, "spec": spec})


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


def name_of(body: dict) -> str:
    return str(_dict(body.get("metadata")).get("name") or "?")


def _supports(runtime: dict, model: dict, multinode: bool) -> tuple[bool, int | None] | None:
    """(whether it gives the format a priority, that priority) where KServe would auto-select the runtime for the
    model; None where it would not."""
    spec = _dict(runtime.get("spec"))
    if spec.get("disabled") is True or spec.get("multiModel") is True or ("workerSpec" in spec) != multinode:
        return None
    protocols = _list(spec.get("protocolVersions"))
    if protocols and str(model.get("protocolVersion") or "v1") not in [str(p) for p in protocols]:
        return None
    fmt = _dict(model.get("modelFormat"))
    name, version = str(fmt.get("name") or "").lower(), fmt.get("version")
    formats = [_dict(f) for f in _list(spec.get("supportedModelFormats"))]
    if not any(
        str(f.get("name") or "").lower() == name and f.get("autoSelect") is True and version in (None, f.get("version"))
        for f in formats
    ):
        return None
    priority = next((f.get("priority") for f in formats if str(f.get("name") or "").lower() == name), None)
    return (True, priority) if isinstance(priority, int) and not isinstance(priority, bool) else (False, None)


def _protocol_order(runtime: dict) -> int:
    protocols = _list(_dict(runtime.get("spec")).get("protocolVersions"))
    return min((_PROTOCOL_ORDER.get(str(p), 5) for p in protocols), default=5)


def _runtime(model: dict, runtimes: dict[tuple[str, str], Document], multinode: bool = False) -> Document | None:
    named = model.get("runtime")
    if isinstance(named, str) and named:
        return runtimes.get(("ServingRuntime", named)) or runtimes.get(("ClusterServingRuntime", named))
    chosen = [
        (kind != "ServingRuntime", not found[0], -(found[1] or 0), _protocol_order(doc.body), name, doc)
        for (kind, name), doc in runtimes.items()
        if (found := _supports(doc.body, model, multinode)) is not None
    ]
    return min(chosen, key=lambda c: c[:5])[5] if chosen else None


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
    """(the predictor's pod as a Pod document, a note on where its runtime came from, the runtime's place where it
    is a file of the run); (None, why, None) where the runtime is neither in the run nor shipped."""
    spec = _dict(doc.body.get("spec"))
    predictor = _dict(spec.get("predictor"))
    model = _dict(predictor.get("model"))
    name = name_of(doc.body)
    mode = _dict(_dict(doc.body.get("metadata")).get("annotations")).get(DEPLOYMENT_MODE)
    if mode == "ModelMesh":  # modelmesh-serving places it in the pods of a multiModel runtime: no pod of its own
        why = "served by ModelMesh in the pods of a ServingRuntime with multiModel: true, judged as that runtime"
        return None, f"{doc.source}:InferenceService/{name}: {why} (give its file)", None
    multinode = "workerSpec" in predictor
    found = _runtime(model, runtimes, multinode)
    shipped = found is None
    if found is None:  # KServe's own, as it ships them
        found = _runtime(model, {("ClusterServingRuntime", n): _shipped(n) for n in SHIPPED}, multinode)
    if found is None:
        fmt, protocol = _dict(model.get("modelFormat")).get("name"), model.get("protocolVersion") or "v1"
        wanted = model.get("runtime") or f"one that auto-selects {fmt!s} for protocol {protocol!s}"
        why = f"its runtime ({wanted}) is neither in this run nor one KServe ships: give the ServingRuntime's file too"
        return None, f"{doc.source}:InferenceService/{name}: {why}", None
    runtime = found.body
    pod = copy.deepcopy({k: v for k, v in _dict(runtime.get("spec")).items() if k not in ("supportedModelFormats",)})
    containers = [c for c in _list(pod.get("containers")) if isinstance(c, dict)]
    main = next((c for c in containers if c.get("name") == "kserve-container"), containers[0] if containers else None)
    if main is None:
        return None, f"{doc.source}:InferenceService/{name}: its runtime {name_of(runtime)} has no container", None
    # the predictor's own kserve-container is merged over the model's (its env, image), its other containers added
    own = [c for c in _list(predictor.get("containers")) if isinstance(c, dict)]
    mine = next((c for c in own if c.get("name") == "kserve-container"), {})
    merged = _merged(_merged(main, model), {k: v for k, v in mine.items() if k != "name"})
    pod["containers"] = [merged if c is main else c for c in containers] + [c for c in own if c is not mine]
    pod["volumes"] = _merge_by(_list(pod.get("volumes")), _list(predictor.get("volumes")), "name")
    for key in ("nodeSelector", "tolerations", "hostIPC"):
        if key in predictor:
            pod[key] = copy.deepcopy(predictor[key])
    kind = runtime.get("kind")
    if shipped:
        note = f"assumed {kind}/{name_of(runtime)} as KServe ships it ({SHIPPED_AT}), the model merged over it"
    else:
        note = f"run as its runtime {kind}/{name_of(runtime)} of this run ({found.source}), the model merged over it"
    what = f"{kind}/{name_of(runtime)}: the container that runs"
    place = None if shipped else Place(found.source, line_of(runtime), what)
    pod_doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod}
    return Document(doc.source, doc.index, pod_doc), note, place


def other_components(doc: Document) -> Document:
    """The InferenceService without its predictor: its transformer's and explainer's containers are pods of their
    own, judged as the manifest says them."""
    body = copy.copy(doc.body)
    spec = {k: v for k, v in _dict(body.get("spec")).items() if k != "predictor"}
    for key, component in spec.items():  # the older `custom: {container: ...}`: a pod of that one container
        container = _dict(_dict(component).get("custom")).get("container")
        if isinstance(container, dict):
            spec[key] = {**_dict(component), "containers": [container]}
    body["spec"] = spec
    return Document(doc.source, doc.index, body)


def renamed(found: list[Definition], doc: Document, note: str, place: Place | None) -> list[Definition]:
    """The pod's definitions named as the InferenceService's predictor, at its line, its runtime related (a runtime
    of the run; one KServe ships has no file here)."""
    name = name_of(doc.body)
    out = []
    for d in found:
        parts = d.facts.target.name[len(doc.source) + 1 :].split("/")  # Pod/NAME[/CONTAINER]
        label = f"{doc.source}:InferenceService/{name}" + (f"/{parts[2]}" if len(parts) > 2 else "")
        related = (place,) if place else ()
        target = replace(d.facts.target, name=label, line=line_of(doc.body), related=related)
        out.append(replace(d, facts=replace(d.facts, target=target), notes=d.notes + (note,)))
    return out
