"""Inference servers in real files (tests/data/real/): what their commands say of /dev/shm (vLLM's and SGLang's
broadcast rings and NCCL across their tensor-parallel ranks, TGI's shards, Triton's python-backend regions). Every
expected figure is written here from the file and FACTS.md's arithmetic ("Other /dev/shm users"), never from the
code under test."""

from __future__ import annotations

import pytest
import yaml

from shmdoctor.fleet import lint
from shmdoctor.model import Report
from shmdoctor.probe.workload import serving
from shmdoctor.render.text import fixes_by_target
from tests.helpers import DATA

REAL = DATA / "real"
MiB = 2**20


def reports(path) -> dict[str, Report]:
    doc = lint((str(path),), swarm=None)
    return {r.facts.target.name.split(":", 1)[1]: r for r in doc.reports}


def vllm_rings(t: int) -> int:
    """FACTS.md, vLLM 0.33: scheduler queue (16 MiB + 1 + T) × 10, one response queue a worker (24 MiB + 2) × 10,
    the TP group's (4 MiB + T) × 6 (its T − 1 readers, + 1)."""
    return (16 * MiB + 1 + t) * 10 + t * (24 * MiB + 2) * 10 + (4 * MiB + t) * 6


def test_vllm_at_tensor_parallel_8_needs_its_rings_and_they_fit_gkes_280gi_emptydir():
    # args: --tensor-parallel-size=8; 8 GPUs; an unsized memory emptyDir under a 280Gi limit
    (r,) = reports(REAL / "gke-vllm-gemma-3-27b-it.yaml").values()
    assert r.requirement is not None and r.requirement.term("vllm").bytes == vllm_rings(8) == 2_206_204_202
    assert r.requirement.term("nccl").bytes == 0  # P2P assumed between 8 GPUs of a GKE node
    assert r.verdict == "ok" and "--tensor-parallel-size 8" in " ".join(r.notes)


def test_a_vllm_image_running_a_ray_worker_script_is_not_a_server():
    # LWS's worker: `sh -c "bash .../multi-node-serving.sh worker ..."` in vllm/vllm-openai: no server of its own
    got = reports(REAL / "lws-vllm-gpu.yaml")
    assert got["LeaderWorkerSet/vllm/leaderTemplate"].requirement.term("vllm").bytes == vllm_rings(8)
    assert got["LeaderWorkerSet/vllm/workerTemplate"].requirement is None


def test_sglang_tp_2_needs_its_tp_queue():
    # `--tp "2"`: SGLang's TP queue (4 MiB + T) × 6
    for r in reports(REAL / "lws-sglang.yaml").values():
        assert r.requirement.bytes == (4 * MiB + 2) * 6 == 25_165_836
        assert r.requirement.tensor_parallel == 2 and "--tp 2" in " ".join(r.notes)


@pytest.mark.parametrize("name", ["sglang-compose.yaml", "sglang-k8s-service.yaml"])
def test_sglang_at_its_default_tensor_parallel_1_needs_nothing_and_stays_ok(name):
    (r,) = reports(REAL / name).values()
    assert (r.requirement.bytes, r.verdict, [f.id for f in r.findings]) == (0, "ok", ["ipc-host"])
    assert "SGLang's default" in " ".join(r.notes)


def test_triton_with_the_default_64_mib_says_what_it_uses_it_for_and_the_one_thing_it_needs():
    (r,) = reports(REAL / "kserve-tritonserver.yaml").values()
    (f,) = [f for f in r.findings if f.id == "default-shm"]
    assert "python-backend" in f.message and "triton_instances=N" in f.message
    assert "workers" not in f.message and "prefetch" not in f.message and f.fixes == ()


def _without_dshm(path, tmp_path, tp: int = 8):
    """The real Deployment as its authors would have it without the dshm volume (the runtime's 64 MiB), at tensor
    parallel tp on as many GPUs."""
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc and doc.get("kind") == "Deployment":
            pod = doc["spec"]["template"]["spec"]
            pod["volumes"] = [v for v in pod["volumes"] if v["name"] != "dshm"]
            for c in pod["containers"]:
                c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] != "dshm"]
                c["args"] = [a.replace("=8", f"={tp}") if "tensor-parallel" in a else a for a in c["args"]]
                for r in c["resources"].values():
                    r["nvidia.com/gpu"] = str(tp)
    out = tmp_path / path.name
    out.write_text(yaml.safe_dump_all(docs))
    return out


def test_vllm_at_tensor_parallel_8_in_64_mib_fails_with_vllms_words_and_an_emptydir_of_its_size(tmp_path):
    (r,) = reports(_without_dshm(REAL / "gke-vllm-gemma-3-27b-it.yaml", tmp_path)).values()
    assert r.verdict == "fail" and r.facts.shm.size_bytes == 64 * MiB
    (f,) = [f for f in r.findings if f.id == "shm-too-small"]
    # the scheduler's queue comes first: (16 MiB + 1 + 8) × 10 = 167,772,250 B = 160.00 MiB, of 64.00 MiB free
    assert "160.00 MiB required, 64.00 MiB free" in f.message
    # 2,206,204,202 B × 1.25 = 2.57 GiB: the next size of the series is 3 GiB
    assert f.fixes[0].shm_bytes == 3 * 1024 * MiB
    text = fixes_by_target([r])
    assert "sizeLimit: 3Gi" in text and "DataLoader" not in f.message


def test_a_single_gpu_vllm_in_64_mib_is_ok_with_nothing_to_change(tmp_path):
    # FACTS.md: at T=1 vLLM runs in one process and creates no broadcast ring; one GPU, no NCCL peer
    (r,) = reports(_without_dshm(REAL / "gke-vllm-gemma-3-27b-it.yaml", tmp_path, tp=1)).values()
    assert (r.facts.shm.size_bytes, r.facts.gpus, r.requirement.bytes) == (64 * MiB, "1", 0)
    assert (r.verdict, r.findings) == ("ok", ())
    assert "tensor parallel 1 (--tensor-parallel-size 1)" in " ".join(r.notes)


def test_tgi_shards_are_ncclss_ranks_and_fit_gkes_60gi():
    # NUM_SHARD 2 and 2 GPUs: TGI's shards talk through NCCL, P2P assumed (0 B), the SHM fallback kept for a warning
    (r,) = reports(REAL / "gke-tgi-llama3-70b.yaml").values()
    assert r.requirement.ranks == 2 and r.requirement.term("nccl").bytes == 0
    assert r.notes == ("workload inferred from its command: tgi, tensor parallel 2 (NUM_SHARD)",)
    # FACTS.md: two ranks over SHM, 8 connections × 9,650,176 B + 2 proxy pools × 34,213,888 B
    assert r.requirement.nccl_fallback == 8 * 9_650_176 + 2 * 34_213_888 == 145_629_184


@pytest.mark.parametrize(
    "image, entrypoint, args, expected",
    [
        ("vllm/vllm-openai:v0.8.5", None, ["--model", "m", "--tensor-parallel-size", "4"], ("vllm", 4)),
        ("vllm/vllm-openai:latest", None, ["--model=m"], ("vllm", 1)),  # vLLM's default
        ("python:3.11", ["vllm", "serve", "m", "-tp", "2"], None, ("vllm", 2)),
        ("x", ["python3", "-m", "sglang.launch_server"], ["--tp-size", "8"], ("sglang", 8)),
        ("x", None, ["--tensor-parallel-size=$(TP_SIZE)"], None),  # neither command nor image names a server
        ("vllm/vllm-openai:v0.6.0", None, ["--tensor-parallel-size=$(TP_SIZE)"], ("vllm", None)),
        ("ghcr.io/huggingface/text-generation-inference:2.0.4", None, ["--num-shard", "4"], ("tgi", 4)),
        ("nvcr.io/nvidia/tritonserver:24.01-py3", None, ["tritonserver", "--model-repository=/m"], ("triton", None)),
        ("hiyouga/verl:ngc-th2.6.0-cu126-vllm0.8.4", None, None, None),  # a Ray image with vLLM inside
        ("vllm/vllm-openai:latest", ["sh", "-c", "ray start --block"], None, None),
        ("vllm/vllm-openai:latest", None, ["--tensor-parallel-size", "0"], ("vllm", None)),
    ],
)
def test_the_server_and_its_tensor_parallel_size_from_image_and_command(image, entrypoint, args, expected):
    got = serving(image, entrypoint, args)
    assert (got and (got.name, got.tensor_parallel)) == expected


def test_tgis_num_shard_variable_is_read_by_name_and_its_flag_wins():
    image = "ghcr.io/huggingface/text-generation-inference:2.0.4"
    got = serving(image, None, None, env=[{"name": "NUM_SHARD", "value": "4"}])
    assert (got.tensor_parallel, got.said) == (4, "NUM_SHARD")
    assert serving(image, None, ["--num-shard", "2"], env={"NUM_SHARD": "4"}).tensor_parallel == 2


def test_a_hostile_tensor_parallel_size_is_bounded_and_judged_as_unsaid(tmp_path):
    path = tmp_path / "compose.yml"
    huge = "9" * 5000
    path.write_text(f"services:\n  s:\n    image: vllm/vllm-openai\n    command: --tensor-parallel-size {huge} --x 1\n")
    (r,) = reports(path).values()  # no GPUs: vLLM's image alone makes it a server
    assert r.requirement is None and [f.id for f in r.findings] == ["default-shm"]
    assert "characters)" in r.findings[0].message and len(r.findings[0].message) < 600
    path.write_text("services:\n  s:\n    image: vllm/vllm-openai\n    command: --tensor-parallel-size 100000\n")
    (r,) = reports(path).values()
    assert r.requirement is None and "--tensor-parallel-size 100000 is not a size" in r.findings[0].message


def test_sglang_tp_2_without_ipc_host_fits_64_mib_over_p2p_and_sizes_compose_for_ncclss_fallback(tmp_path):
    # SGLang's own compose file without its `ipc: host`, at --tp 2: the runtime's 64 MiB. Its TP queue is
    # (4 MiB + 2) × 6 = 25,165,836 B; NCCL over P2P takes none, and where it falls back to /dev/shm (SGLang sets
    # NCCL_CUMEM_ENABLE=0) it adds 8 × 9,650,176 + 2 × 34,213,888 = 145,629,184 B: 170,795,020 B in all, past 64 MiB.
    text = (REAL / "sglang-compose.yaml").read_text().replace("    ipc: host\n", "")
    path = tmp_path / "compose.yaml"
    path.write_text(text.replace("--port 30000\n", "--port 30000\n      --tp 2\n", 1))
    (r,) = reports(path).values()
    assert (r.facts.shm.size_bytes, r.requirement.bytes, r.verdict) == (64 * MiB, 25_165_836, "warn")
    (f,) = r.findings
    assert f.id == "nccl-shm-fallback" and "needs 139 MiB more" in f.message
    # 170,795,020 × 1.25 = 213,493,775 B (203.6 MiB): the next size of the series is 256 MiB
    assert f.fixes[0].shm_bytes == 256 * MiB and 'shm_size: "256m"' in fixes_by_target([r])
