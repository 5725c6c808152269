"""shmdoctor lint end to end: files, directories and stdin in; a table or one JSON document out; exit codes; and the
round trip: the fix snippet lint prints, applied to the failing file, makes lint pass."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from shmdoctor import workload
from shmdoctor.cli import main
from tests.helpers import DATA as TEST_DATA
from tests.helpers import REPO, validate

DATA = TEST_DATA / "manifests"
BAD = TEST_DATA / "manifests-bad"
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # needs 900 MiB


def lint(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def lint_json(capsys, *args: str) -> tuple[int, dict]:
    code, out, err = lint(capsys, *args, "--format", "json")
    assert out, err
    return code, validate(json.loads(out))


def by_name(doc: dict) -> dict:
    return {r["target"]["name"]: r for r in doc["reports"]}


def test_json_document_for_a_directory(capsys):
    code, doc = lint_json(capsys, str(DATA), *SEED)
    assert code == 1 and doc["schema"] == "shmdoctor/lint/1" and doc["verdict"] == "fail"
    assert len(doc["passed_over"]) == 2 and doc["passed_over"][0].endswith("training.yaml:ConfigMap/train-config")
    assert "skipped" not in doc  # len(passed_over)
    reports = by_name(doc)
    assert len(reports) == 24
    evaluator = reports[f"{DATA}/docker-compose.yml:evaluator"]
    assert evaluator["verdict"] == "fail" and evaluator["target"]["kind"] == "service"
    assert [f["id"] for f in evaluator["findings"]][0] == "shm-too-small"
    assert evaluator["findings"][0]["fixes"][0]["compose"] == 'shm_size: "1536m"'
    job = reports[f"{DATA}/k8s/training.yaml:Job/resnet50-train"]
    assert job["verdict"] == "ok" and job["shm"]["size_bytes"] == 2 << 30 and job["requirement"]["bytes"] == 900 << 20


def test_annotation_overrides_the_command_line(capsys):
    # the command line asks for 100 MiB batches × 8 workers; the Job's annotation says 100 × 1 MiB × 4 workers
    code, doc = lint_json(
        capsys,
        str(DATA / "k8s" / "training.yaml"),
        "--batch-size",
        "100",
        "--num-workers",
        "8",
        "--sample-bytes",
        "100MiB",
    )
    reports = by_name(doc)
    job = reports[f"{DATA}/k8s/training.yaml:Job/resnet50-train"]
    assert job["requirement"]["loader"]["num_workers"] == 4 and job["requirement"]["bytes"] == 900 << 20
    assert "shmdoctor.loader" in job["notes"][0]
    ddp = reports[f"{DATA}/k8s/training.yaml:PyTorchJob/bert-ddp/Worker"]["requirement"]["loader"]
    assert (ddp["batch_size"], ddp["num_workers"], ddp["ranks"]) == (32, 8, 4)
    deployment = reports[f"{DATA}/k8s/training.yaml:Deployment/feature-server"]  # no ML image, command or GPU
    assert deployment["requirement"] is None and deployment["notes"] == [workload.NOT_LIKELY]


def test_annotation_alone_is_enough_and_others_get_no_need(capsys):
    code, doc = lint_json(capsys, str(DATA / "docker-compose.yml"))
    reports = by_name(doc)
    assert reports[f"{DATA}/docker-compose.yml:trainer"]["requirement"]["bytes"] == 900 << 20
    evaluator = reports[f"{DATA}/docker-compose.yml:evaluator"]
    assert evaluator["requirement"] is None and [f["id"] for f in evaluator["findings"]] == ["default-shm"]
    assert code == 0


def test_text_table_and_fixes_in_each_files_language(capsys):
    code, out, err = lint(capsys, str(DATA / "docker-compose.yml"), str(DATA / "k8s"), *SEED, "--workload", "*")
    assert code == 1 and err == ""
    assert out.startswith("shmdoctor lint: 18 services and workloads in 2 files")
    assert "passed over 2 objects without a pod template" in out
    evaluator = out.split(f"{DATA}/docker-compose.yml:evaluator  (shm-too-small)")[1]
    assert evaluator.splitlines()[1].split()[1:3] == ["shm_size:", '"1536m"']
    deployment = out.split(f"{DATA}/k8s/training.yaml:Deployment/feature-server  (shm-too-small)")[1]
    assert "emptyDir: {medium: Memory, sizeLimit: 1536Mi}" in deployment.split("\n\n")[0]


def test_the_hosts_shm_is_said_in_the_table_not_unknown(capsys):
    """SGLang's compose (ipc: host) and its Deployment (hostIPC): the SHM column read 'unknown' beside IPC host."""
    real = TEST_DATA / "real"
    code, out, _ = lint(capsys, str(real / "sglang-compose.yaml"), str(real / "sglang-k8s-service.yaml"))
    rows = [line.split() for line in out.splitlines() if line.startswith("OK ")]
    assert code == 0 and len(rows) == 2 and all(row[2:4] == ["host's", "host"] for row in rows), out


def test_a_log_viewer_with_gpus_is_no_training_job(capsys):
    """kohya_ss's compose reserves the GPUs for its tensorboard service too: the trainer is warned, the viewer not."""
    code, doc = lint_json(capsys, str(TEST_DATA / "real" / "kohya-ss-docker-compose.yaml"))
    verdicts = {r["target"]["id"]: r["verdict"] for r in doc["reports"]}
    assert code == 0 and verdicts == {"kohya-ss-gui": "warn", "tensorboard": "ok"}, verdicts


def test_stdin_yaml_and_json(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO((DATA / "kubectl-get-pods.json").read_text()))
    code, doc = lint_json(capsys, "-", *SEED)
    assert sorted(by_name(doc)) == [
        "<stdin>:Pod/coredns-5dd5756b68-7xk2p",
        "<stdin>:Pod/notebook-0",
        "<stdin>:Pod/resnet50-train-x7v4q",
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO((DATA / "k8s" / "training.yaml").read_text()))  # helm template | ...
    code, doc = lint_json(capsys, "-")
    assert len(doc["reports"]) == 8 and len(doc["passed_over"]) == 2


def test_stdin_that_is_not_utf8_is_one_line_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "shmdoctor", "lint", "-"],
        input="services:\n  caf\xe9: {}\n".encode("latin-1"),
        capture_output=True,
        cwd=REPO,
        timeout=60,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"" and len(err.splitlines()) == 1, err
    assert err.startswith("shmdoctor: error: <stdin>: cannot read: 'utf-8' codec can't decode byte 0xe9")


UNSIZED = {  # a /dev/shm whose size the file cannot tell: never OK, whatever the need
    "docker-compose.yml": """services:
  notebook: {image: x, ipc: host}
  host-bind: {image: x, volumes: ["/dev/shm:/dev/shm"]}
  named: {image: x, shm_size: 4g, volumes: ["scratch:/dev/shm"]}
  long: {image: x, shm_size: 4g, volumes: [{type: volume, source: scratch, target: /dev/shm}]}
volumes: {scratch: {}}
""",
    "pod.yaml": """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostIPC: true
  containers:
    - {name: host-ipc, image: x}
    - {name: host-path, image: x, volumeMounts: [{name: node-shm, mountPath: /dev/shm}]}
    - {name: claim, image: x, volumeMounts: [{name: claim, mountPath: /dev/shm}]}
    - {name: disk, image: x, volumeMounts: [{name: disk, mountPath: /dev/shm}]}
  volumes:
    - {name: node-shm, hostPath: {path: /dev/shm}}
    - {name: claim, persistentVolumeClaim: {claimName: scratch}}
    - {name: disk, emptyDir: {}}
""",
}


def test_a_shm_the_file_cannot_size_is_said_not_passed(capsys, tmp_path):
    for name, text in UNSIZED.items():
        (tmp_path / name).write_text(text)
    need = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "2GiB"]  # 1.8 TiB
    code, doc = lint_json(capsys, str(tmp_path), *need)
    assert len(doc["reports"]) == 8 and doc["verdict"] != "ok"
    for report in doc["reports"]:
        ids = [f["id"] for f in report["findings"]]
        assert report["verdict"] != "ok" and "probe-incomplete" in ids, (report["target"]["name"], ids)
        said = next(f["message"] for f in report["findings"] if f["id"] == "probe-incomplete")
        assert "the size of /dev/shm (" in said
        # a volume at /dev/shm overrides shm_size: no fix may offer it
        assert not any("shm_size" in (fix.get("compose") or "") for f in report["findings"] for fix in f["fixes"])
    assert report["shm"]["free_bytes"] is None


@pytest.mark.parametrize(
    "path, message",
    [
        ("helm-unrendered.yaml", "helm-unrendered.yaml:5: an unrendered Helm template ({{ ... }}): render it first"),
        ("tabs.yml", "tabs.yml:3: not YAML: found character that cannot start any token"),
        ("values.yaml", "values.yaml:2: not a compose file (services:), a Kubernetes manifest"),
        ("compose-bad-size.yml", "compose-bad-size.yml:3: service 'trainer': shm_size: cannot read 'plenty'"),
        ("job-bad-quantity.yaml", "job-bad-quantity.yaml:10: Job/trainer: resources.limits.memory"),
        ("missing.yaml", "missing.yaml: no such file or directory"),
    ],
)
def test_bad_files_exit_2_with_file_and_line(capsys, path, message):
    code, out, err = lint(capsys, str(BAD / path))
    assert code == 2 and out == ""
    assert err.startswith("shmdoctor: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_bad_json_unreadable_file_and_empty_directory(capsys, tmp_path):
    (tmp_path / "pods.json").write_text('{"kind": "List",\n "items": [}\n')
    assert lint(capsys, str(tmp_path / "pods.json"))[2].strip().endswith("pods.json:2: not JSON: Expecting value")
    (tmp_path / "latin1.yaml").write_bytes("services:\n  caf\xe9: {image: x}\n".encode("latin-1"))
    code, _, err = lint(capsys, str(tmp_path / "latin1.yaml"))
    assert code == 2 and "latin1.yaml: cannot read: 'utf-8' codec can't decode" in err
    secret = tmp_path / "secret.yaml"
    secret.write_text("kind: x")
    secret.chmod(0)
    if _unreadable(secret):  # root reads anything: then this case cannot be made here
        code, _, err = lint(capsys, str(secret))
        assert code == 2 and "cannot read: Permission denied" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = lint(capsys, str(empty))
    assert code == 2 and "no *.yml, *.yaml, *.json, *.container file or script" in err


def _unreadable(path: Path) -> bool:
    try:
        path.read_bytes()
    except PermissionError:
        return True
    return False


def test_a_bad_loader_annotation_is_its_workloads_finding_and_the_others_are_judged(capsys, tmp_path):
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations:\n"
        "    shmdoctor.loader: batch_size=many\nspec:\n  template:\n    spec:\n"
        "      containers: [{name: c, image: x}]\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec:\n  containers: [{name: c, image: x}]\n"
    )
    code, doc = lint_json(capsys, str(manifest), "--batch-size", "8", "--num-workers", "1", "--sample-bytes", "1k")
    bad, good = by_name(doc)[f"{manifest}:Job/j"], by_name(doc)[f"{manifest}:Pod/ok"]
    assert code == 1 and bad["verdict"] == "fail" and bad["requirement"] is None
    (finding,) = [f for f in bad["findings"] if f["id"] == "bad-label"]
    assert f"{manifest}:6: loader spec 'batch_size=many': batch_size must be an integer" in finding["message"]
    assert good["verdict"] == "ok" and good["requirement"]["loader"]["batch_size"] == 8


def test_only_unknown_kinds(capsys, tmp_path):
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n")
    code, doc = lint_json(capsys, str(tmp_path / "cm.yaml"))
    assert (code, doc["verdict"], doc["reports"], doc["passed_over"]) == (
        0,
        "ok",
        [],
        [f"{tmp_path}/cm.yaml:ConfigMap/c"],
    )


def test_lint_imports_neither_torch_nor_docker():
    code = (
        "import sys; from shmdoctor.cli import main; "
        "main(['lint', 'tests/data/manifests', '--format', 'json']); "
        "assert not {'torch', 'docker'} & set(sys.modules), sorted({'torch', 'docker'} & set(sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr


# ---- the round trip: apply the printed fix to the failing file, lint again ----


def _fix(report: dict, language: str) -> str:
    first = next(f for f in report["findings"] if f["severity"] == "error")
    return first["fixes"][0][language]


def _apply_compose(compose: dict, service: str, snippet: str) -> None:
    owner = snippet.split("# on service ", 1)[1].split(",")[0] if snippet.startswith("# on service ") else service
    _merge(compose["services"][owner], yaml.safe_load(snippet))


def _merge(into: dict, patch: dict) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, list) and isinstance(into.get(key), list) and key == "volumes":
            into[key].extend(value)
        else:
            into[key] = value


@pytest.mark.parametrize(
    "source, services",
    [
        ("docker-compose.yml", ["evaluator", "preprocess", "feature-reader", "bigshm-smallmem"]),
        ("stack.yml", ["trainer", "dashboard"]),  # Swarm: a tmpfs volume, as shm_size would be ignored
    ],
)
def test_compose_fix_round_trip(capsys, tmp_path, source, services):
    need = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "2MiB", "--workload", "*"]  # 1.8 GiB each
    code, doc = lint_json(capsys, str(DATA / source), *need)
    compose = yaml.safe_load((DATA / source).read_text())
    for service in services:
        report = by_name(doc)[f"{DATA}/{source}:{service}"]
        assert report["verdict"] == "fail", service
        _apply_compose(compose, service, _fix(report, "compose"))
    fixed = tmp_path / source
    fixed.write_text(yaml.safe_dump(compose))
    _, doc = lint_json(capsys, str(fixed), *need)
    after = by_name(doc)
    for service in services:
        assert after[f"{fixed}:{service}"]["verdict"] == "ok", (service, after[f"{fixed}:{service}"]["findings"])


def _apply_kubernetes(pod_spec: dict, container: str | None, snippet: str) -> None:
    patch = yaml.safe_load(snippet)
    volumes = pod_spec.setdefault("volumes", [])
    for volume in patch["volumes"]:
        volumes[:] = [v for v in volumes if v["name"] != volume["name"]] + [volume]
    [target] = [c for c in pod_spec["containers"] if container in (None, c["name"])]
    mounts = target.setdefault("volumeMounts", [])
    mounts[:] = [m for m in mounts if m["mountPath"] != "/dev/shm"] + patch["volumeMounts"]
    target.setdefault("resources", {}).setdefault("limits", {}).update(patch.get("resources", {}).get("limits", {}))


def _pod_spec(obj: dict) -> dict:
    kind = obj["kind"]
    return {"Pod": lambda: obj["spec"], "CronJob": lambda: obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]}.get(
        kind, lambda: obj["spec"]["template"]["spec"]
    )()


@pytest.mark.parametrize(
    "source, targets",
    [
        (
            "k8s/training.yaml",
            {"Deployment/feature-server": None, "CronJob/nightly-eval": None, "StatefulSet/embedder/embed": "embed"},
        ),
        ("kubectl-get-pods.json", {"Pod/resnet50-train-x7v4q": None, "Pod/coredns-5dd5756b68-7xk2p": None}),
    ],
)
def test_kubernetes_fix_round_trip(capsys, tmp_path, source, targets):
    need = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "2MiB", "--workload", "*"]  # 1.8 GiB
    code, doc = lint_json(capsys, str(DATA / source), *need)
    objects = list(yaml.safe_load_all((DATA / source).read_text()))
    objects = objects[0]["items"] if objects[0]["kind"] == "List" else objects
    for name, container in targets.items():
        report = by_name(doc)[f"{DATA}/{source}:{name}"]
        assert report["verdict"] == "fail", name
        kind, obj_name = name.split("/")[:2]
        [obj] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == obj_name]
        _apply_kubernetes(_pod_spec(obj), container, _fix(report, "kubernetes"))
    fixed = tmp_path / (Path(source).stem + ".yaml")
    fixed.write_text(yaml.safe_dump_all(objects))
    _, doc = lint_json(capsys, str(fixed), *need)
    after = by_name(doc)
    for name in targets:
        assert after[f"{fixed}:{name}"]["verdict"] == "ok", (name, after[f"{fixed}:{name}"]["findings"])
