"""Kubernetes manifests (and `kubectl get -o json` Lists) -> one Facts per container of every pod template.

Pod specs are found generically: any mapping with a `containers` list, wherever it is nested (a Pod,
template.spec, jobTemplate.spec.template.spec, a CRD's replica specs such as PyTorchJob's, a Ray worker group, an
LWS leader and worker template, a serving runtime's own containers and its workerSpec beside them). Each is named
by the resource's own names (replica type, groupName, the key that holds it), not by list indexes. Objects
without one (ConfigMap, Service, ...) are passed over and counted, never guessed at.

/dev/shm of a container: a volume mounted at /dev/shm decides; a memory-backed emptyDir is sized by its
sizeLimit capped by the pod's memory limits (the sum of its containers' limits), or by those limits alone; without
a mount the runtime gives 64 MiB (or the node's own /dev/shm with hostIPC). Where the manifest cannot tell the
size (the node's /dev/shm, a disk emptyDir without sizeLimit, another kind of volume) it is said in `unreadable`.
Nothing runs from a manifest: use, and so what is free, is never known (used and free are None).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..loader import LOADER_LABEL
from ..model import ENGINE_DEFAULT_SHM, SHM, SHM_SIZE_UNKNOWN, Facts, Flag, Ipc, Memory, Shm
from ..sizes import format_size, parse_quantity
from ..suppress import IGNORE_LABEL
from . import operators, workflows
from .documents import Definition, Document, line_of, target, where, with_changes
from .mountpath import at_shm
from .workload import amd_gpus, env_pairs, idle, ml_signs, nccl_env, serving

# Keys that only lead to a pod template: left out of the name of a template nested in a CRD.
_STRUCTURAL = {"spec", "template", "jobTemplate"}
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")  # no pod nests in a container


def is_manifest(body: Any) -> bool:
    """An object with apiVersion and kind; a List needs only kind and items (kubectl's output has been seen without)."""
    if not isinstance(body, dict) or not isinstance(body.get("kind"), str):
        return False
    return "apiVersion" in body or (body["kind"] == "List" and isinstance(body.get("items"), list))


def _mapping(value: Any, what: str, source: str, node: Any) -> dict:
    """A field that must be a mapping: absent (or null) is empty; another type is bad input, with file:line."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{where(source, node)}: {what} must be a mapping, not {type(value).__name__}")
    return value


def _sequence(value: Any, what: str, source: str, node: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(f"{where(source, node)}: {what} must be a list, not {type(value).__name__}")
    return value


def _boolean(value: Any, what: str, source: str, node: Any) -> bool:
    """A field that must be true or false: absent is false; "false" (a string, which is true) is bad input."""
    if value is None or isinstance(value, bool):
        return bool(value)
    raise UsageError(f"{where(source, node)}: {what} must be true or false, not {type(value).__name__} {value!r}"[:300])


def objects(body: dict, kindless: list[str] | None = None) -> Iterator[dict]:
    """The object itself, or the items of a List, recursively: a `<Kind>List` (what the API server and `kubectl get
    --raw` return) gives its items its kind and apiVersion, which they do not repeat; a `List` (`kubectl get -o
    json`) holds objects of any kind, each saying its own: one without is said in `kindless` and passed over."""
    kind = body["kind"]
    if kind != "List" and not (kind.endswith("List") and isinstance(body.get("items"), list)):
        yield body
        return
    items = body.get("items")
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        if kind != "List" and not isinstance(item.get("kind"), str):
            item = with_changes(
                item, kind=kind.removesuffix("List"), apiVersion=item.get("apiVersion", body.get("apiVersion"))
            )
        if is_manifest(item):
            yield from objects(item, kindless)
        elif kindless is not None:
            name = (item.get("metadata") or {}).get("name") if isinstance(item.get("metadata"), dict) else None
            kindless.append(
                f"List item {index + 1}{f' ({name})' if name else ''}: no kind (a List's items each say theirs)"
            )


def pod_templates(
    node: Any, path: tuple[str, ...] = (), parent: Any = None, holder: Any = None
) -> Iterator[tuple[tuple[str, ...], dict, dict, Any]]:
    """(where it sits, template, pod spec, what holds the template) for every pod spec (a mapping with a containers
    list), however deep: a pod spec is looked into too (a serving runtime's workerSpec sits beside its own
    containers). The template is what holds the spec under `spec:` (its metadata carries annotations), or the pod
    spec itself; what holds the template is the mapping around it (a Ray group spec with its rayStartParams)."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            held = path[-1:] == ("spec",) and isinstance(parent, dict)
            yield (path[:-1], parent, node, holder) if held else (path, node, node, parent)
        for key, value in node.items():
            if key not in _CONTAINER_LISTS:
                yield from pod_templates(value, path + (str(key),), node, parent)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from pod_templates(value, path + (_item_name(value, i),), node, parent)


def _item_name(item: Any, index: int) -> str:
    """A list item's own name (a JobSet's replicated job, a Ray worker group's groupName), else its index."""
    for key in ("name", "groupName", "replicaType"):
        if isinstance(item, dict) and isinstance(item.get(key), str) and item[key]:
            return item[key]
    return str(index)


def _template_label(path: tuple[str, ...]) -> str:
    """('spec', 'pytorchReplicaSpecs', 'Worker', 'template') -> 'Worker'; a Deployment's template -> ''."""
    named = [p for p in path if p not in _STRUCTURAL]
    return named[-1] if named else ""


class _Pod:
    def __init__(self, doc: Document, obj: dict, path: tuple[str, ...], template: dict, spec: dict, holder: Any):
        self.doc, self.obj, self.template, self.spec = doc, obj, template, spec
        meta = _mapping(obj.get("metadata"), "metadata", doc.source, obj)
        self.name = f"{obj['kind']}/{meta.get('name') or meta.get('generateName') or '?'}"
        label = _template_label(path)
        self.name += f"/{label}" if label else ""
        self.id = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else None
        self.containers = self.spec["containers"]
        if not self.containers or not all(isinstance(c, dict) for c in self.containers):
            what = "is empty" if not self.containers else "holds something that is not a mapping"
            raise UsageError(f"{where(doc.source, self.spec)}: {self.name}: spec.containers {what}: nothing to judge")
        self.engine = workflows.engine(obj)
        self.operator, self.added = operators.operator(obj), {}
        shaped = self.operator.shape(obj, path, holder, spec) if self.operator and self.operator.shape else None
        if shaped is not None:  # the pod as the operator will create it
            self.spec, self.added = shaped.spec, shaped.added
            self.containers = self.spec["containers"]
        self.host_ipc = _boolean(self.spec.get("hostIPC"), "spec.hostIPC", doc.source, self.spec)
        volumes = _sequence(self.spec.get("volumes"), "spec.volumes", doc.source, self.spec)
        self.volumes = {v["name"]: v for v in volumes if isinstance(v, dict) and isinstance(v.get("name"), str)}

    def quantity(self, value: Any, node: Any, what: str) -> int | None:
        if value in (None, "") or (self.engine and workflows.is_parameter(value)):  # set when the workflow runs
            return None
        try:
            return parse_quantity(value)
        except UsageError as e:
            raise UsageError(
                f"{where(self.doc.source, node if line_of(node) else self.template)}: {self.name}: {what}: {e}"
            ) from None

    def memory_limit(self, container: dict) -> int | None:
        resources = _mapping(container.get("resources"), "resources", self.doc.source, container)
        limits = _mapping(resources.get("limits"), "resources.limits", self.doc.source, container)
        return self.quantity(limits.get("memory"), container, "resources.limits.memory")

    def gpus(self, container: dict) -> str | None:
        """The container's nvidia.com/gpu or amd.com/gpu limit, as a count; else AMD's devices or variables."""
        resources = container.get("resources")
        limits = resources.get("limits") if isinstance(resources, dict) else None
        for key in ("nvidia.com/gpu", "amd.com/gpu"):
            gpus = limits.get(key) if isinstance(limits, dict) else None
            if isinstance(gpus, (int, str)) and str(gpus).isdigit() and int(gpus) > 0:
                return str(gpus)
        return amd_gpus(self.host_devices(container), env=container.get("env"))

    def host_devices(self, container: dict) -> list[str]:
        """The node's paths the container mounts from hostPath volumes (/dev/kfd: AMD's compute device)."""
        mounts = container.get("volumeMounts")
        names = {m.get("name") for m in mounts if isinstance(m, dict)} if isinstance(mounts, list) else set()
        paths = []
        for name in names:
            volume = self.volumes.get(name) if isinstance(name, str) else None
            host_path = volume.get("hostPath") if isinstance(volume, dict) else None
            if isinstance(host_path, dict) and isinstance(host_path.get("path"), str):
                paths.append(host_path["path"])
        return paths

    def pod_memory_limit(self) -> int | None:
        """Pod-level resources where given, else the sum of the containers' limits (None if one has none)."""
        resources = _mapping(self.spec.get("resources"), "spec.resources", self.doc.source, self.spec)
        pod_level = _mapping(resources.get("limits"), "spec.resources.limits", self.doc.source, self.spec).get("memory")
        if pod_level is not None:
            return self.quantity(pod_level, self.spec, "spec.resources.limits.memory")
        limits = [self.memory_limit(c) for c in self.containers]
        return sum(limits) if limits and all(limits) else None  # type: ignore[arg-type]

    def shm(self, container: dict, unreadable: list[str]) -> Shm:
        mounts = _sequence(container.get("volumeMounts"), "volumeMounts", self.doc.source, container)
        mount = next((m for m in mounts if isinstance(m, dict) and at_shm(m.get("mountPath", ""))), None)
        if mount is None:
            if self.host_ipc:
                unreadable.append(
                    f"{SHM_SIZE_UNKNOWN} (hostIPC: true uses the node's {SHM}, whose size a manifest does not tell)"
                )
                return Shm.unmeasured(None, "host-ipc", "hostIPC: true (the node's /dev/shm)")
            return Shm.unmeasured(
                ENGINE_DEFAULT_SHM, "runtime-shm", "no volume at /dev/shm: the container runtime's default"
            )
        read_only = mount.get("readOnly") in (True, "true")
        volume = self.volumes.get(mount.get("name")) if isinstance(mount.get("name"), str) else None
        if volume is None:
            raise UsageError(
                f"{where(self.doc.source, mount)}: {self.name}: the volumeMount at {SHM} names "
                f"volume {mount.get('name')!r}, which the pod does not define"
            )
        if "emptyDir" in volume:
            empty_dir = _mapping(volume["emptyDir"], "emptyDir", self.doc.source, volume)
            size_limit = self.quantity(empty_dir.get("sizeLimit"), volume, "emptyDir.sizeLimit")
            if empty_dir.get("medium") != "Memory":
                if size_limit is None:
                    unreadable.append(
                        f"{SHM_SIZE_UNKNOWN} (a disk-backed emptyDir without sizeLimit takes up to the "
                        "node's ephemeral storage: not in the manifest)"
                    )
                return Shm.unmeasured(
                    size_limit,
                    "k8s-emptydir-disk",
                    f"emptyDir {volume.get('name')} on the node's disk (no medium: Memory)",
                    read_only,
                )
            shm = self._memory_empty_dir(volume["name"], size_limit, unreadable)
            added = self.added.get(volume["name"])
            return replace(shm, read_only=read_only, detail=f"{added}: {shm.detail}" if added else shm.detail)
        host_path = _mapping(volume.get("hostPath"), "hostPath", self.doc.source, volume).get("path", "")
        if at_shm(host_path):
            unreadable.append(f"{SHM_SIZE_UNKNOWN} (hostPath {SHM} is the node's, whose size a manifest does not tell)")
            return Shm.unmeasured(None, "host", f"hostPath {SHM} (the node's /dev/shm)", read_only)
        kind = next((k for k in volume if k != "name"), "unknown")
        unreadable.append(f"{SHM_SIZE_UNKNOWN} (a {kind} volume at {SHM}: its size is not in the manifest)")
        return Shm.unmeasured(None, "unknown", f"a {kind} volume at {SHM}", read_only)

    def _memory_empty_dir(self, name: str, size_limit: int | None, unreadable: list[str]) -> Shm:
        pod_limit = self.pod_memory_limit()
        caps = [c for c in (size_limit, pod_limit) if c is not None]
        size = min(caps) if caps else None
        detail = f"emptyDir {name} (medium: Memory" + (f", sizeLimit {format_size(size_limit)})" if size_limit else ")")
        if pod_limit is not None and (size_limit is None or pod_limit < size_limit):
            detail += f", capped by the pod's memory limits ({format_size(pod_limit)})"
        if size is None:
            unreadable.append(
                f"the size of {SHM} (a memory-backed emptyDir without sizeLimit, in a pod without "
                "memory limits, takes up to the node's memory: not in the manifest)"
            )
        return Shm.unmeasured(size, "k8s-emptydir", detail)

    def loader_spec(self, name: str = LOADER_LABEL) -> tuple[str | None, Any]:
        """The pod template's shmdoctor.loader annotation or label (or another of shmdoctor's), else the object's."""
        for meta in (self.template.get("metadata"), self.obj.get("metadata")):
            for key in ("annotations", "labels"):
                values = (meta if isinstance(meta, dict) else {}).get(key) or {}
                if isinstance(values, dict) and values.get(name):
                    return str(values[name]), values
        return None, None

    def named(self) -> list[tuple[str, dict]]:
        """(name, container) for each container: its pod's name, then its own where the pod has several."""
        several = len(self.containers) > 1
        return [(self.name + (f"/{c.get('name')}" if several else ""), c) for c in self.containers]

    def definitions(self) -> list[Definition]:
        spec, at = self.loader_spec()
        out = []
        for name, container in self.named():
            unreadable: list[str] = []
            shm = self.shm(container, unreadable)
            by_operator = any(shm.detail.startswith(why) for why in self.added.values())
            operator: frozenset[Flag] = frozenset(("operator-shm",)) if by_operator else frozenset()
            facts = Facts(
                target=target(
                    "workload", self.doc.source, name, container if line_of(container) else self.template, self.id
                ),
                shm=shm,
                ipc=Ipc("host") if self.host_ipc else Ipc("private"),
                flags=operator | idle(container.get("image"), container.get("command"), container.get("args")),
                memory=Memory(limit_bytes=self.memory_limit(container), used_bytes=None),
                runtime="kubernetes",
                ml_signs=ml_signs(
                    container.get("image"),
                    container.get("command"),
                    container.get("args"),
                    container.get("source"),  # an Argo script's
                    container.get("script"),  # a Tekton step's
                ),
                server=serving(
                    container.get("image"), container.get("command"), container.get("args"), env=container.get("env")
                ),
                gpus=self.gpus(container),
                nccl_env=nccl_env(env_pairs(container.get("env"))),
                unreadable=tuple(unreadable),
                operator_fix=self.operator.fix if self.operator and self.operator.fix else None,
            )
            assumed = (f"assumed {self.operator.assumed()}",) if self.operator else ()
            at_spec = where(self.doc.source, at if line_of(at) else self.template)
            out.append(Definition(facts, spec, at_spec, notes=assumed, ignore_label=self.loader_spec(IGNORE_LABEL)[0]))
        return out


def placed(doc: Document) -> Iterator[tuple[str, dict, dict, dict]]:
    """(target name, object, pod spec, container) for every container lint judges that --fix can write: the file's
    own pod spec and container, never the copy an operator shaped (KubeRay keeps a /dev/shm the template mounts);
    a workflow engine's step is a pod the file never writes as one, so it has none."""
    for obj in objects(doc.body):
        for path, template, spec, holder in [] if workflows.engine(obj) else pod_templates(obj):
            named = _Pod(doc, obj, path, template, spec, holder).named()
            for (name, _), container in zip(named, spec["containers"]):
                yield f"{doc.source}:{name}", obj, spec, container


def _pods(obj: dict) -> list[tuple[tuple[str, ...], dict, dict, Any]]:
    """The pods an object runs: a workflow engine's steps, or every pod template nested in it."""
    engine = workflows.engine(obj)
    if engine == "argo":
        return list(workflows.argo_pods(obj))
    return list(workflows.tekton_pods(obj) if engine == "tekton" else pod_templates(obj))


def probe(doc: Document) -> tuple[list[Definition], list[str]]:
    """(one Definition per container of every pod template, 'Kind/name' of the objects passed over)."""
    found: list[Definition] = []
    passed_over: list[str] = []
    for obj in objects(doc.body, passed_over):
        templates, created = _pods(obj), workflows.manifests(obj, doc.source)
        for manifest in created:  # what an Argo resource template creates: the workflow is judged through it
            more, skipped = probe(manifest)
            found.extend(more)
            passed_over.extend(skipped)
        if not templates and not created:
            meta = _mapping(obj.get("metadata"), "metadata", doc.source, obj)
            passed_over.append(f"{obj['kind']}/{meta.get('name', '?')}")
        for path, template, spec, holder in templates:
            found.extend(_Pod(doc, obj, path, template, spec, holder).definitions())
    return found, passed_over
