"""lint --fix on small files that hold each hard case: values defined elsewhere (${VAR}, anchors, merge keys),
multi-document YAML, a volume already named dshm, the host's IPC never written, Helm templates and stdin refused,
the exit codes CI reads, --diff writing nothing."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys

from shmdoctor.cli import main
from tests.helpers import DATA, validate

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB: 1.5 GiB with the margin


def fix(tmp_path, name: str, text: str, *extra: str) -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    code = main(["lint", str(path), "--fix", *LOADER, *extra])
    return code, path.read_text()


def test_compose_keeps_comments_quotes_anchors_and_variables(tmp_path, capsys):
    text = """# the stack
x-common: &common
  image: trainer:1   # pinned
services:
  trainer:
    <<: *common
    shm_size: '64m'   # too small
    environment:
      DATA: ${DATA_DIR:-/data}
  shared: &shared
    image: trainer:1
  variable:
    image: trainer:1
    shm_size: ${SHM:-64m}
"""
    code, after = fix(tmp_path, "docker-compose.yml", text)
    assert code == 1
    assert "    shm_size: '1536m'   # too small\n" in after  # its quotes, its comment and the spacing before it
    assert after.replace("'1536m'   # too small", "'64m'   # too small") == text
    err = capsys.readouterr().err
    assert "shared: not written: service shared is the anchor &shared" in err  # shared: its users are not changed
    assert "variable: not written: shm_size is ${SHM:-64m}, set from a variable" in err
    assert main(["lint", str(tmp_path / "docker-compose.yml"), "--fix", *LOADER]) == 1  # still fails: said, not hidden
    assert (tmp_path / "docker-compose.yml").read_text() == after  # and a second --fix changes nothing


def test_a_merge_key_value_is_overridden_in_the_service_only(tmp_path):
    text = "x-c: &c\n  image: t\n  shm_size: 64m\nservices:\n  a:\n    <<: *c\n  b:\n    <<: *c\n    shm_size: 2g\n"
    code, after = fix(tmp_path, "compose.yaml", text)
    assert code == 1 and after == text.replace("    <<: *c\n  b:", "    <<: *c\n    shm_size: 1536m\n  b:")


def test_kubernetes_multi_document_keeps_an_existing_volume_named_dshm(tmp_path, capsys):
    text = """apiVersion: v1
kind: ConfigMap
metadata: {name: c}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train  # nightly
spec:
  template:
    spec:
      containers:
        - name: train
          image: pytorch/pytorch
          resources:
            limits: {memory: 1Gi}
      volumes:
        - name: dshm
          configMap: {name: c}
"""
    code, after = fix(tmp_path, "job.yaml", text)
    assert code == 1
    added = after.replace(text.split("      volumes:\n")[0], "")
    assert "          configMap: {name: c}\n" in added  # the volume named dshm is kept as it was
    assert "- name: shmdoctor-dshm\n" in added and "sizeLimit: 1536Mi" in added and "medium: Memory" in added
    assert "            limits: {memory: 1536Mi}\n" in after  # 900 MiB × 1.25 + 256 MiB for the process, rounded up
    assert after.startswith("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n")
    assert "name: train  # nightly\n" in after and "hostIPC" not in after
    capsys.readouterr()
    assert main(["lint", str(tmp_path / "job.yaml"), "--format", "json", *LOADER]) == 0


def test_diff_writes_nothing_and_exits_1(tmp_path, capsys):
    path = tmp_path / "docker-compose.yml"
    path.write_text("services:\n  t:\n    image: pytorch/pytorch\n")
    assert main(["lint", str(path), "--diff", *LOADER]) == 1
    out = capsys.readouterr().out
    assert out.endswith("     image: pytorch/pytorch\n+    shm_size: 1536m\n") and "+++ b/" in out
    assert path.read_text() == "services:\n  t:\n    image: pytorch/pytorch\n"


def test_an_ok_file_is_untouched_and_exits_0(tmp_path):
    text = "services:\n  t:\n    image: pytorch/pytorch\n    shm_size: 2g\n"
    assert fix(tmp_path, "docker-compose.yml", text) == (0, text)


def test_the_host_ipc_alternative_is_never_written(tmp_path):
    code, after = fix(tmp_path, "docker-compose.yml", "services:\n  t:\n    image: x\n    ipc: none\n")
    assert code == 1 and after == "services:\n  t:\n    image: x\n    ipc: private\n    shm_size: 1536m\n"


def test_quadlet_podman_args_size_is_the_one_changed(tmp_path):
    text = "[Unit]\nDescription=t\n\n[Container]\nImage=x\nPodmanArgs=--shm-size=64m --memory=1g\n\n[Install]\n"
    code, after = fix(tmp_path, "t.container", text)
    assert code == 1
    assert after == text.replace("--shm-size=64m --memory=1g", "--shm-size=1536m --memory=1536m")


def test_azure_ml_gets_resources_shm_size(tmp_path):
    text = "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\ncommand: python train.py\n"
    text += "environment: azureml:pytorch:1\nresources:\n  instance_count: 2\n"
    code, after = fix(tmp_path, "job.yml", text)
    assert code == 1 and after == text + "  shm_size: 1536m\n"


def test_ecs_json_keeps_its_indent(tmp_path):
    text = '{\n    "family": "t",\n    "containerDefinitions": [\n        {\n            "name": "c",\n'
    text += '            "image": "pytorch/pytorch",\n            "memory": 1024\n        }\n    ]\n}\n'
    code, after = fix(tmp_path, "task.json", text)
    assert code == 1
    added = '            "linuxParameters": {\n                "sharedMemorySize": 1536\n            },\n'
    assert after == text.replace('"memory": 1024\n', '"memory": 1536\n').replace("        {\n", "        {\n" + added)


def test_ecs_json_with_an_array_on_one_line_gets_its_new_key_first(tmp_path):
    text = '{\n  "family": "t",\n  "requiresCompatibilities": ["EC2"],\n  "containerDefinitions": [\n    {\n'
    text += '      "name": "c",\n      "image": "pytorch/pytorch",\n'
    text += '      "command": ["torchrun", "train.py"]\n    }\n  ]\n}\n'
    code, after = fix(tmp_path, "task.json", text)
    added = '      "linuxParameters": {\n        "sharedMemorySize": 1536\n      },\n'
    assert code == 1 and after == text.replace("    {\n", "    {\n" + added)


def test_helm_templates_and_stdin_are_refused(tmp_path, capsys, monkeypatch):
    template = tmp_path / "templates"
    template.mkdir()
    (template / "job.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Values.name }}\n")
    assert main(["lint", str(template), "--fix", *LOADER]) == 2
    assert "render it first" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO("services:\n  t: {image: x}\n"))
    assert main(["lint", "-", "--fix", *LOADER]) == 2
    assert "give the file, not stdin" in capsys.readouterr().err


def test_a_file_the_writer_cannot_parse_is_left_as_it_is(tmp_path, capsys):
    text = "services:\n  t:\n    image: pytorch/pytorch\n    image: x\n"  # a duplicate key: PyYAML reads it
    assert fix(tmp_path, "docker-compose.yml", text) == (1, text)  # still fails: not fixed
    assert "not written: it cannot be parsed for writing: found duplicate key" in capsys.readouterr().err


def test_a_link_is_fixed_in_its_target_and_an_unwritable_folder_is_one_line(tmp_path, capsys):
    real = tmp_path / "real.yml"
    real.write_text("services:\n  t:\n    image: pytorch/pytorch\n")
    (tmp_path / "link.yml").symlink_to(real)
    assert main(["lint", str(tmp_path / "link.yml"), "--fix", *LOADER]) == 1
    assert (tmp_path / "link.yml").is_symlink() and "shm_size: 1536m" in real.read_text()
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "docker-compose.yml").write_text("services:\n  t:\n    image: pytorch/pytorch\n")
    locked.chmod(0o500)
    try:
        code = main(["lint", str(locked / "docker-compose.yml"), "--fix", *LOADER])
    finally:
        locked.chmod(0o700)
    err = capsys.readouterr().err
    if os.geteuid() != 0:  # root writes anyway
        assert code == 2 and err.strip().endswith("cannot write: Permission denied")


def test_a_value_written_inside_a_one_line_object_is_changed_in_place(tmp_path):
    text = '{"jobDefinitionName": "t", "type": "container", "containerProperties": {\n'
    text += '  "image": "pytorch/pytorch", "command": ["torchrun", "train.py"],\n'
    text += '  "linuxParameters": {"sharedMemorySize": 512}}}\n'
    code, after = fix(tmp_path, "job.json", text)
    assert code == 1 and after == text.replace('"sharedMemorySize": 512', '"sharedMemorySize": 1536')


def test_the_projects_own_definitions_every_written_target_re_lints_ok(tmp_path, capsys):
    """Compose (a tmpfs at /dev/shm, deploy memory, an IPC owner), Kubernetes (a disk emptyDir at /dev/shm, pods
    of a kubectl List), Batch: each target --fix writes is OK after; each other one is said with why."""
    for source in ("manifests", "platforms"):
        shutil.copytree(DATA / source, tmp_path / source)
    need = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "2MiB", "--workload", "*"]
    assert main(["lint", str(tmp_path), "--fix", *need]) == 1
    said = capsys.readouterr().err.splitlines()
    fixed = {line.split("fixed ", 1)[1].split(": ")[0] for line in said if " fixed " in line}
    assert len(fixed) == 15 and len(said) == 15 + 8  # 8 said, not written: Swarm 3, Fargate 1, no size 4
    main(["lint", str(tmp_path), "--format", "json", *need])
    verdicts = {r["target"]["name"]: r["verdict"] for r in json.loads(capsys.readouterr().out)["reports"]}
    assert {name: verdicts[name] for name in fixed} == dict.fromkeys(fixed, "ok")
    assert main(["lint", str(tmp_path), "--diff", *need]) == 1  # Swarm's and Fargate's FAILs stay: lint's exit
    assert capsys.readouterr().out == ""  # and nothing left to write


def test_a_sizelimit_capped_by_the_pods_memory_is_never_made_smaller(tmp_path):
    text = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: train
      image: pytorch/pytorch
      resources: {limits: {memory: 512Mi}}
      volumeMounts: [{name: dshm, mountPath: /dev/shm}]
  volumes:
    - name: dshm
      emptyDir: {medium: Memory, sizeLimit: 32Gi}
"""
    code, after = fix(tmp_path, "pod.yaml", text)  # 512 MiB of memory caps the 32 GiB: the limit is what grows
    assert code == 1 and after == text.replace("{memory: 512Mi}", "{memory: 1536Mi}")


def test_a_crlf_file_keeps_crlf_on_every_line_it_changes_or_adds(tmp_path):
    """A file saved on Windows: the lines --fix writes end as the file's others do, in every format."""
    compose = "services:\n  a:\n    image: pytorch/pytorch   # the image\n"
    compose += "  b:\n    image: vllm/vllm\n    shm_size: 64m  # b\n"
    fixed = compose.replace("  # the image\n", "  # the image\n    shm_size: 1536m\n").replace("64m  # b", "1536m  # b")
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n      image: x\n"
    task = '{\n  "family": "t",\n  "containerDefinitions": [\n'
    task += '    {\n      "name": "c",\n      "image": "x"\n    }\n  ]\n}\n'
    unit = "[Container]\nImage=pytorch/pytorch\n"
    for name, text in (("compose.yml", compose), ("pod.yaml", pod), ("task.json", task), ("t.container", unit)):
        crlf = text.replace("\n", "\r\n")
        path = tmp_path / name
        path.write_bytes(crlf.encode())
        assert main(["lint", str(path), "--fix", *LOADER]) == 1
        after = path.read_bytes().decode()
        assert after.count("\n") == after.count("\r\n") > crlf.count("\n"), (name, after)
    assert (tmp_path / "compose.yml").read_bytes().decode() == fixed.replace("\n", "\r\n")


def test_the_spacing_before_an_edited_lines_comment_stays(tmp_path):
    text = "services:\n  a:\n    image: pytorch/pytorch\n    shm_size: 64m        # aligned\n    ipc: none # close\n"
    code, after = fix(tmp_path, "compose.yml", text)
    assert code == 1
    assert after == text.replace("64m        #", "1536m        #").replace("none #", "private #")


FARGATE = '{"jobDefinitionName": "t", "type": "container", "platformCapabilities": ["FARGATE"],\n'
FARGATE += '"containerProperties": {"image": "pytorch/pytorch", "command": ["torchrun", "train.py"]}}\n'


def test_diff_exits_as_lint_a_fail_it_cannot_fix_is_1_a_file_it_cannot_judge_2(tmp_path, capsys):
    """--diff hides nothing: Fargate's FAIL (no size to write) is exit 1; a folder with a bad file is exit 2, the
    bad file said, the other's diff shown."""
    (tmp_path / "fargate.json").write_text(FARGATE)
    assert main(["lint", str(tmp_path / "fargate.json"), "--diff", *LOADER]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Fargate cannot size /dev/shm" in err
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "bad.yml").write_text("services:\n  t:\n    image: x\n    shm_size: lots\n")
    (folder / "good.yml").write_text("services:\n  t:\n    image: pytorch/pytorch\n")
    assert main(["lint", str(folder), "--diff", *LOADER]) == 2
    out, err = capsys.readouterr()
    assert out.endswith("+    shm_size: 1536m\n") and f"could not judge {folder / 'bad.yml'}" in err


def test_diff_as_json_is_lints_document_with_the_patch_of_each_file(tmp_path, capsys):
    (tmp_path / "compose.yml").write_text("services:\n  t:\n    image: pytorch/pytorch\n")
    (tmp_path / "fargate.json").write_text(FARGATE)
    assert main(["lint", str(tmp_path), "--diff", "--format", "json", *LOADER]) == 1
    doc = validate(json.loads(capsys.readouterr().out))
    assert doc["verdict"] == "fail" and len(doc["reports"]) == 2
    compose, fargate = sorted(doc["diffs"], key=lambda d: d["file"])
    assert compose["file"] == str(tmp_path / "compose.yml") and compose["patch"].endswith("+    shm_size: 1536m\n")
    assert compose["written"] == [f"{tmp_path / 'compose.yml'}:t: shm_size: 1536m"] and compose["not_written"] == []
    assert fargate["patch"] == "" and "Fargate cannot size /dev/shm" in fargate["not_written"][0]
    assert (tmp_path / "compose.yml").read_text() == "services:\n  t:\n    image: pytorch/pytorch\n"


def test_diff_in_sarif_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "compose.yml").write_text("services:\n  t:\n    image: pytorch/pytorch\n")
    assert main(["lint", str(tmp_path / "compose.yml"), "--diff", "--format", "sarif", *LOADER]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "shmdoctor: error: --diff prints a patch as text or json, not sarif\n"
