"""A memory-backed emptyDir's size as the kubelet makes it (pkg/volume/emptydir, SizeMemoryBackedVolumes): the
smaller of its sizeLimit and the pod's memory limit, that limit the sum of its containers'; a pod with a container
without a limit has none, and the tmpfs takes up to the node's memory: not in the manifest."""

from __future__ import annotations

import json

import pytest

from shmdoctor.cli import main

GiB = 2**30


def pod(limits: list[str | None], size_limit: str | None) -> str:
    containers = ""
    for i, limit in enumerate(limits):
        containers += f"    - name: c{i}\n      image: pytorch/pytorch\n"
        if i == 0:
            containers += "      volumeMounts:\n        - name: dshm\n          mountPath: /dev/shm\n"
        if limit:
            containers += f"      resources:\n        limits:\n          memory: {limit}\n"
    size = f"\n        sizeLimit: {size_limit}" if size_limit else ""
    return (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\nspec:\n  containers:\n"
        + containers
        + f"  volumes:\n    - name: dshm\n      emptyDir:\n        medium: Memory{size}\n"
    )


def shm_of(tmp_path, text: str, capsys) -> dict:
    path = tmp_path / "pod.yaml"
    path.write_text(text)
    main(["lint", str(path), "--format", "json"])
    reports = json.loads(capsys.readouterr().out)["reports"]
    assert not reports[0]["target"]["name"].endswith(("c1", "c2"))
    return reports[0]  # c0's, the container the volume is mounted in


@pytest.mark.parametrize(
    "limits,size_limit,size",
    [
        (["1Gi", "2Gi"], None, 3 * GiB),  # the pod's limit: the sum of its containers'
        (["1Gi", "2Gi", "512Mi"], None, 3 * GiB + GiB // 2),
        (["1Gi", "2Gi"], "4Gi", 3 * GiB),  # capped by the pod's limit
        (["1Gi", "2Gi"], "1Gi", GiB),  # its own sizeLimit, smaller
        (["1Gi", None], "2Gi", 2 * GiB),  # a container without a limit: the pod has none; sizeLimit alone
        (["1Gi", None], None, None),  # neither: up to the node's memory, not in the manifest
        ([None], None, None),
    ],
)
def test_a_memory_emptydir_is_the_smaller_of_its_size_limit_and_the_pods_limit(
    tmp_path, capsys, limits, size_limit, size
):
    report = shm_of(tmp_path, pod(limits, size_limit), capsys)
    assert (report["shm"]["source"], report["shm"]["size_bytes"]) == ("k8s-emptydir", size)
    if size is None:
        assert "probe-incomplete" in [f["id"] for f in report["findings"]]
