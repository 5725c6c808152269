"""lint --fix on real public files (tests/data/real and its fix/ folder, each with its source in their README):
the fixed file re-lints OK, every line the diff removes or adds is one the fix needs, every comment stays, and a
second --fix changes nothing. Files where a fix must not be written stay byte for byte as they were."""

from __future__ import annotations

import difflib
import json
import shutil

import pytest

from shmdoctor.cli import main
from tests.helpers import DATA

REAL = DATA / "real"
LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "2MiB"]  # 1.76 GiB: each of these fails
LEFT = ("README.md", "paddle", "ecs-fargate")  # the files below that must stay as they are
FIXED = sorted(p.name for p in (REAL / "fix").iterdir() if not any(left in p.name for left in LEFT)) + [
    "../kubeflow-pytorchjob-simple.yaml",
    "../lws-vllm-gpu.yaml",
    "../kserve-huggingfaceserver-multinode.yaml",
    "../azureml-cifar-distributed-job.yml",
    "../ollama.container",
    "../immich/docker-compose.yml",
]
BIG = ("lws-vllm-gpu", "kserve-huggingfaceserver")  # 15 and 3 GiB as found: judged with 20 MiB samples (17.6 GiB)
# What a fix writes: each changed or added line holds one of these (a value, or the structure that holds it).
WRITTEN = (
    "shm_size:",
    "mem_limit:",
    "ShmSize=",
    "PodmanArgs=--memory=",
    "sizeLimit:",
    "medium: Memory",
    "emptyDir:",
    "volumes:",
    "volumeMounts:",
    "- name: dshm",
    "name: dshm",
    "mountPath: /dev/shm",
    "resources:",
    "limits:",
    "memory:",
)


def _lint(*args: str) -> int:
    big = any(name in a for a in args for name in BIG)
    return main(["lint", *args, *LOADER, *(["--sample-bytes", "20MiB"] if big else [])])


@pytest.mark.parametrize("name", FIXED)
def test_a_real_file_fixed_re_lints_ok_with_a_diff_of_only_what_the_fix_needs(name, tmp_path, capsys):
    source = (REAL / "fix" / name).resolve()
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    if (source.parent / ".env").exists():
        shutil.copy(source.parent / ".env", tmp_path / ".env")
    before = copy.read_text()
    _lint(str(copy), "--format", "json")
    assert '"verdict": "ok"' not in capsys.readouterr().out  # as found, it fails (or warns: size unknown)

    assert _lint(str(copy), "--fix") == 1  # a file changed
    capsys.readouterr()
    after = copy.read_text()
    assert _lint(str(copy), "--format", "json") == 0
    assert '"verdict": "ok"' in capsys.readouterr().out  # the fixed file is OK for the loader that failed

    changed = [
        line[1:]
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert changed and all(any(key in line for key in WRITTEN) for line in changed), changed
    comments = [line for line in before.splitlines() if line.lstrip().startswith("#")]
    assert comments == [line for line in after.splitlines() if line.lstrip().startswith("#")]  # every one kept

    assert _lint(str(copy), "--fix") == 0  # idempotent: the second --fix changes nothing
    assert copy.read_text() == after


@pytest.mark.parametrize(
    "name, why",
    [
        # KubeRay's /dev/shm, sized from memory the file does not give: unknown, so no size to write
        ("kuberay-ray-cluster.heterogeneous.yaml", "nothing to write"),
        ("ecs-fargate-remote-browser.json", "Fargate cannot size /dev/shm"),  # a size Fargate ignores: not written
        ("fix/training-operator-paddle-simple-gpu.yaml", "nothing to write"),  # no sizeLimit: the node's, unknown
        ("fix/ecs-fargate-recommender-task-definition.json", "Fargate cannot size /dev/shm"),
        ("fix/ecs-fargate-clip-extractor-task-definition.json", "Fargate cannot size /dev/shm"),
        ("fix/ecs-fargate-market-pulse-task-definition.json", "Fargate cannot size /dev/shm"),
    ],
)
def test_a_fix_that_would_be_ignored_or_shrink_dev_shm_is_said_not_written(name, why, tmp_path, capsys):
    copy = tmp_path / name.split("/")[-1]
    shutil.copy(REAL / name, copy)
    before = copy.read_bytes()
    _lint(str(copy), "--fix")
    assert why in capsys.readouterr().err
    assert copy.read_bytes() == before


def test_a_kuberay_group_too_small_for_its_loader_is_fixed_in_kuberays_terms(tmp_path, capsys):
    """KubeRay sizes the Ray container's /dev/shm from its memory limit: the limit --fix raises raises both, and lint,
    reading KubeRay's rule, judges the pod that will run."""
    copy = tmp_path / "ray.yaml"
    copy.write_text((REAL / "kuberay-ray-cluster.complete.yaml").read_text())
    loader = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB a loader

    def worker() -> dict:
        doc = json.loads(capsys.readouterr().out)
        return next(r for r in doc["reports"] if r["target"]["name"].endswith("small-group"))

    assert main(["lint", str(copy), *loader, "--format", "json"]) == 1
    before = worker()  # KubeRay's 1Gi holds the loader, the 1Gi memory limit does not hold it and the process
    assert (before["shm"]["size_bytes"], [f["id"] for f in before["findings"]][0]) == (2**30, "memory-limit")
    main(["lint", str(copy), *loader, "--fix"])
    capsys.readouterr()
    assert 'memory: "1536Mi"' in copy.read_text()
    assert main(["lint", str(copy), *loader, "--format", "json"]) == 0
    after = worker()
    assert after["shm"]["size_bytes"] == 1536 * 2**20 and after["verdict"] == "ok"  # KubeRay's, from the new limit
