"""Issue 36's defects of what lint read: each definition judged as its engine runs it (an unset variable in a
command does not hide a known /dev/shm, a bound /dev, GPU capabilities moby's nvidia driver serves, AMD's /dev/kfd
from a hostPath, ECS's ipcMode task), and a folder run says a broken definition as bad input while it judges the
rest; the "render it first" hint only where rendering would help."""

from __future__ import annotations

import json

from shmdoctor.cli import main
from shmdoctor.probe import compose, documents, ecs, kubernetes
from shmdoctor.sizes import GiB


def compose_facts(text: str):
    [doc] = documents.parse(text, "c.yml")
    return {d.facts.target.name.split(":")[1]: d.facts for d in compose.probe(doc, environ={})}


def test_an_unset_variable_in_a_command_does_not_hide_a_known_shm():
    found = compose_facts(
        "services:\n  llm:\n    image: vllm/vllm-openai\n    shm_size: 1g\n"
        "    command: --model ${LLM_MODEL_ID}\n  sized:\n    image: x\n    shm_size: ${SHM}\n"
    )
    assert (found["llm"].shm.size_bytes, found["llm"].unreadable) == (GiB, ())
    assert found["sized"].unreadable == (
        "the variables SHM (not set here: compose would substitute an empty string)",
    )  # where the variable sizes /dev/shm, it is said


def test_a_bound_dev_is_the_hosts_shm_and_gpu_capabilities_are_gpus():
    found = compose_facts(
        "services:\n  short:\n    image: x\n    volumes: [/dev:/dev]\n    shm_size: 8g\n"
        "  long:\n    image: x\n    volumes: [{type: bind, source: /dev, target: /dev}]\n"
        "  caps:\n    image: x\n"
        "    deploy: {resources: {reservations: {devices: [{capabilities: [compute, utility]}]}}}\n"
        "  driver:\n    image: x\n    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 2}]}}}\n"
        "  other:\n    image: x\n    deploy: {resources: {reservations: {devices: [{capabilities: [tpu]}]}}}\n"
    )
    assert [found[n].shm.source for n in ("short", "long")] == ["host", "host"]
    assert found["short"].shm.size_bytes is None  # the engine's shm mount is gone with /dev bound over it
    assert [found[n].gpus for n in ("caps", "driver", "other")] == ["all", "2", None]


def test_a_hostpath_dev_kfd_is_an_amd_gpu():
    text = """apiVersion: v1
kind: Pod
metadata: {name: rocm}
spec:
  containers:
    - name: train
      image: rocm/pytorch
      volumeMounts: [{name: kfd, mountPath: /dev/kfd}]
  volumes: [{name: kfd, hostPath: {path: /dev/kfd}}]
"""
    [doc] = documents.parse(text, "p.yaml")
    [found], _ = kubernetes.probe(doc)
    assert found.facts.gpus == "all"


def test_ipc_mode_task_is_the_pause_containers_shm_not_private():
    body = {
        "family": "t",
        "ipcMode": "task",
        "containerDefinitions": [{"name": "a", "image": "x", "linuxParameters": {"sharedMemorySize": 1024}}],
    }
    [found] = ecs.probe(documents.Document("t.json", 0, body))
    assert (found.facts.ipc.mode, found.facts.ipc.owner) == ("container", "the task's pause container")
    assert found.facts.shm.size_bytes is None and "ipcMode: task" in found.facts.unreadable[0]


def test_a_folder_run_says_a_broken_definition_and_judges_the_rest(tmp_path, capsys):
    (tmp_path / "good.yml").write_text("services:\n  web:\n    image: nginx\n")
    (tmp_path / "broken.yml").write_text("services:\n  web:\n    image: nginx\n   ports: [80]\n")
    (tmp_path / "notes.yml").write_text("title: x\n  - not: [yaml\n")  # no key of a format lint reads
    assert main(["lint", str(tmp_path), "--format", "json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert [r["target"]["name"] for r in doc["reports"]] == [f"{tmp_path}/good.yml:web"]
    assert [e.split(": ", 1)[0] for e in doc["errors"]] == [f"{tmp_path}/broken.yml:4"]
    assert any(f.startswith(f"{tmp_path}/notes.yml") for f in doc["files_passed_over"])


def test_render_it_first_only_where_rendering_would_parse(tmp_path, capsys):
    (tmp_path / "job.yaml").write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: ${NAME}}\nspec: ${SPEC: x\n")
    assert main(["lint", str(tmp_path / "job.yaml")]) == 2
    err = capsys.readouterr().err
    assert "render it first" not in err and "not YAML" in err
    (tmp_path / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {parallelism: ${N}}\n"
    )
    assert main(["lint", str(tmp_path / "job.yaml")]) == 2
    assert "render it first: envsubst" in capsys.readouterr().err
