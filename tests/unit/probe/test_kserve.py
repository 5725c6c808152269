"""KServe InferenceService with predictor.model -> the pod its ServingRuntime makes: the runtime of this run by name
or as KServe auto-selects, the model's container merged over the runtime's (args concatenated); the runtime named as
a related location; a runtime not in the run said in one line."""

from __future__ import annotations

import copy

import pytest
import yaml

from shmdoctor.fleet import lint
from shmdoctor.probe import kserve
from shmdoctor.probe.documents import Document
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, assert_one_line_error, forked_cli

ISVC = DATA / "kserve" / "llama-isvc.yaml"
VLLM = DATA / "real" / "kserve-vllmserver.yaml"  # kserve/kserve config/runtimes (aaac4e29)


def _reports(*paths):
    doc = lint(tuple(str(p) for p in paths), swarm=None)
    return {r.facts.target.name.split(":", 1)[1]: r for r in doc.reports}


def test_a_model_runs_as_its_runtimes_container_with_the_model_merged_over_it():
    report = _reports(ISVC, VLLM)["InferenceService/llama"]
    facts = report.facts
    # the runtime's memory-backed dshm without sizeLimit, capped by the model's 48Gi (it replaced the runtime's 2Gi)
    assert (facts.shm.size_bytes, facts.shm.source, facts.memory.limit_bytes, facts.gpus) == (
        48 * GiB,
        "k8s-emptydir",
        48 * GiB,
        "2",
    )
    assert facts.server is not None and facts.server.tensor_parallel == 2  # the model's args after the runtime's
    assert facts.target.related[0].file == str(VLLM) and facts.target.related[0].line == 1
    assert any(n.startswith("run as its runtime ClusterServingRuntime/kserve-vllmserver") for n in report.notes)


def _runtime(kind: str, name: str, priority: int | None = None, **supported) -> tuple[tuple[str, str], Document]:
    fmt = {"name": "vLLM", "autoSelect": True, **supported}
    if priority is not None:
        fmt["priority"] = priority
    spec = {"supportedModelFormats": [fmt], "containers": [{"name": "kserve-container", "image": name}]}
    body = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}
    return (kind, name), Document(f"{name}.yaml", 0, body)


@pytest.mark.parametrize(
    "runtimes, model, chosen",
    [
        ([("ClusterServingRuntime", "a", 1), ("ServingRuntime", "b", 1)], {}, "b"),  # the namespace's first
        ([("ClusterServingRuntime", "a", 1), ("ClusterServingRuntime", "b", 2)], {}, "b"),  # then priority
        ([("ClusterServingRuntime", "a", 1), ("ClusterServingRuntime", "b", 2)], {"runtime": "a"}, "a"),  # named
    ],
)
def test_the_runtime_is_the_named_one_else_kserves_choice(runtimes, model, chosen):
    found = dict(_runtime(kind, name, priority) for kind, name, priority in runtimes)
    assert kserve._runtime({"modelFormat": {"name": "vllm"}, **model}, found).body["metadata"]["name"] == chosen


def test_a_disabled_runtime_or_one_without_auto_select_is_not_chosen():
    key, doc = _runtime("ServingRuntime", "off", autoSelect=False)
    assert kserve._runtime({"modelFormat": {"name": "vLLM"}}, {key: doc}) is None
    doc.body["spec"]["supportedModelFormats"][0]["autoSelect"] = True
    doc.body["spec"]["disabled"] = True
    assert kserve._runtime({"modelFormat": {"name": "vLLM"}}, {key: doc}) is None
    other_version = copy.deepcopy(doc)
    other_version.body["spec"]["disabled"] = False
    other_version.body["spec"]["supportedModelFormats"][0]["version"] = "2"
    assert kserve._runtime({"modelFormat": {"name": "vLLM", "version": "1"}}, {key: other_version}) is None


def test_without_its_runtime_in_the_run_the_one_kserve_ships_is_assumed(tmp_path):
    report = _reports(ISVC)["InferenceService/llama"]  # kserve-vllmserver as shipped: the same unsized memory dshm
    assert (report.facts.shm.size_bytes, report.facts.target.related) == (48 * GiB, ())
    assert any(n.startswith("assumed ClusterServingRuntime/kserve-vllmserver as KServe ships it") for n in report.notes)
    body = yaml.safe_load(ISVC.read_text())
    body["spec"]["predictor"]["model"]["modelFormat"]["name"] = "onnx"  # Triton's, which speaks v2 only
    path = tmp_path / "isvc.yaml"
    path.write_text(yaml.safe_dump(body))
    assert_one_line_error(forked_cli("lint", str(path)), 2, "its runtime (one that auto-selects onnx for protocol v1)")
    body["spec"]["predictor"]["model"]["protocolVersion"] = "v2"  # as KServe's ONNX sample says it: Triton, 64 MiB
    path.write_text(yaml.safe_dump(body))
    assert _reports(path)["InferenceService/llama"].facts.shm.size_bytes == 64 * MiB
    body["spec"]["predictor"]["model"]["runtime"] = "my-runtime"
    path.write_text(yaml.safe_dump(body))
    assert_one_line_error(forked_cli("lint", str(path)), 2, "its runtime (my-runtime) is neither in this run nor")


def test_text_names_the_runtime_of_the_run_as_a_related_location():
    proc = forked_cli("lint", str(ISVC), str(VLLM))
    assert proc.returncode == 0
    assert f"InferenceService/llama: also: {VLLM}:1 (ClusterServingRuntime/kserve-vllmserver" in proc.stdout


def test_fix_is_not_written_into_the_services_file(tmp_path):
    path = tmp_path / "isvc.yaml"
    body = yaml.safe_load(ISVC.read_text())
    body["spec"]["predictor"]["model"]["resources"]["limits"]["memory"] = "1Gi"  # the runtime's dshm: 1 GiB
    path.write_text(yaml.safe_dump(body))
    before = path.read_text()
    proc = forked_cli("lint", str(path), str(VLLM), "--fix", "--workload", "*")
    assert path.read_text() == before and "a model's pod is its ServingRuntime's" in proc.stderr
    assert _reports(path, VLLM)["InferenceService/llama"].facts.shm.size_bytes == 1024 * MiB


def _choice(model: dict, *runtimes: tuple[tuple[str, str], Document], multinode: bool = False) -> str | None:
    found = kserve._runtime({"modelFormat": {"name": "vLLM"}, **model}, dict(runtimes), multinode)
    return found.body["metadata"]["name"] if found else None


def test_kserves_selection_rules_of_predictor_model_go():
    """GetSupportingRuntimes at aaac4e29: a ModelMesh runtime (multiModel) never serves an InferenceService; a
    runtime with a workerSpec only a multinode predictor; the model's protocolVersion (v1 unless it says) among the
    runtime's protocolVersions; a model's version only a format of that version; a given priority before none."""
    mesh, plain = _runtime("ServingRuntime", "mesh", 9), _runtime("ClusterServingRuntime", "plain")
    mesh[1].body["spec"]["multiModel"] = True
    assert _choice({}, mesh, plain) == "plain"  # the namespace's runtime would win were it not ModelMesh's
    workers = _runtime("ServingRuntime", "workers", 9)
    workers[1].body["spec"]["workerSpec"] = {"containers": [{"name": "worker-container", "image": "w"}]}
    assert (_choice({}, workers, plain), _choice({}, workers, plain, multinode=True)) == ("plain", "workers")
    v2 = _runtime("ServingRuntime", "v2-only", 9)
    v2[1].body["spec"]["protocolVersions"] = ["v2", "grpc-v2"]
    assert (_choice({}, v2, plain), _choice({"protocolVersion": "v2"}, v2, plain)) == ("plain", "v2-only")
    versioned, unversioned = _runtime("ServingRuntime", "one", version="1"), _runtime("ServingRuntime", "any")
    assert (_choice({"modelFormat": {"name": "vLLM", "version": "1"}}, unversioned, versioned)) == "one"
    assert _choice({}, _runtime("ServingRuntime", "a"), _runtime("ServingRuntime", "b", 0)) == "b"


def test_a_models_default_protocol_picks_the_shipped_runtime_that_speaks_it():
    """An sklearn model (protocol v1): kserve-mlserver's priority 2 speaks v2 only, so kserve-sklearnserver (the
    corpus' ART sample); the same model at v2 goes to MLServer."""
    art = DATA / "real" / "kserve" / "explanation-art-mnist-art.yaml"
    notes = _reports(art)["InferenceService/artserver"].notes
    assert any("ClusterServingRuntime/kserve-sklearnserver as KServe ships it" in n for n in notes)
    model = {"modelFormat": {"name": "sklearn"}, "protocolVersion": "v2"}
    shipped = {("ClusterServingRuntime", n): kserve._shipped(n) for n in kserve.SHIPPED}
    assert kserve._runtime(model, shipped).body["metadata"]["name"] == "kserve-mlserver"


def test_a_modelmesh_model_is_served_in_its_multi_model_runtimes_pods(tmp_path):
    """A ModelMesh InferenceService (the deploymentMode annotation) has no pod of its own: one line says it is the
    multiModel runtime's pods, the runtime judged as its pod (modelmesh-serving's Deployment is its containers and
    volumes); alone, nothing to judge."""
    body = yaml.safe_load(ISVC.read_text())
    body["metadata"]["annotations"] = {"serving.kserve.io/deploymentMode": "ModelMesh"}
    path = tmp_path / "isvc.yaml"
    path.write_text(yaml.safe_dump(body))
    assert_one_line_error(forked_cli("lint", str(path)), 2, "served by ModelMesh in the pods of a ServingRuntime")
    runtime = yaml.safe_load(VLLM.read_text())
    runtime["spec"]["multiModel"] = True
    mesh = tmp_path / "mesh-runtime.yaml"
    mesh.write_text(yaml.safe_dump(runtime))
    reports = _reports(path, mesh)
    assert list(reports) == ["ClusterServingRuntime/kserve-vllmserver"]  # the model: no pod of its own
    assert reports["ClusterServingRuntime/kserve-vllmserver"].facts.shm.size_bytes == 2 * GiB  # its dshm, its 2Gi
