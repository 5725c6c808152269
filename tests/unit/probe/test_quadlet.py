"""Podman Quadlet .container units -> Facts: ShmSize, PodmanArgs, Tmpfs / Volume / Mount at /dev/shm."""

from __future__ import annotations

import io
import json

import pytest

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import files, quadlet
from shmdoctor.rules import judge
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA


def unit(lines: str):
    [found] = quadlet.probe("[Unit]\nDescription=x\n\n[Container]\nImage=my/app:1\n" + lines, "train.container")
    return found.facts


@pytest.mark.parametrize(
    "lines, size, source, ipc, read_only",
    [
        ("", 64000 * 1024, "podman-shm", "private", False),
        ("ShmSize=2g\n", 2 * GiB, "podman-shm", "private", False),
        ("PodmanArgs=--shm-size=1g --memory=8g\n", GiB, "podman-shm", "private", False),
        ("PodmanArgs=--shm-size 1g\n", GiB, "podman-shm", "private", False),
        ("PodmanArgs=--ipc=host\n", None, "host-ipc", "host", False),
        ("PodmanArgs=--ipc=none\n", None, "none", "none", False),
        ("Tmpfs=/dev/shm:size=512m\n", 512 * MiB, "tmpfs", "private", False),
        ("Tmpfs=/dev/shm:ro,size=512m\nShmSize=2g\n", 512 * MiB, "tmpfs", "private", True),  # the mount wins
        ("Volume=/dev/shm:/dev/shm\n", None, "host", "private", False),
        ("Mount=type=tmpfs,destination=/dev/shm,tmpfs-size=1g\n", GiB, "tmpfs", "private", False),
        ("PodmanArgs=--ipc=host \\\n  --memory=8g\n", None, "host-ipc", "host", False),  # a continued line
    ],
)
def test_unit_shm(lines, size, source, ipc, read_only):
    facts = unit(lines)
    assert (facts.shm.size_bytes, facts.shm.source, facts.ipc.mode, facts.shm.read_only) == (
        size,
        source,
        ipc,
        read_only,
    )
    assert facts.runtime == "podman" and facts.target.name == "train.container:train"


def test_gpus_memory_and_ml_signs():
    facts = unit("AddDevice=nvidia.com/gpu=all\nPodmanArgs=--memory=16g\nExec=torchrun --nproc-per-node=8 train.py\n")
    assert (facts.gpus, facts.memory.limit_bytes, facts.ml_signs) == ("all", 16 * GiB, ("command torchrun",))


def test_fixes_are_said_as_quadlet_keys(tmp_path, capsys):
    path = tmp_path / "train.container"
    path.write_text("[Container]\nImage=nvcr.io/nvidia/pytorch:24.01-py3\nExec=python train.py\n")
    assert main(["lint", str(tmp_path), "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]) == 1
    out = capsys.readouterr().out
    assert "ShmSize=1536m" in out and "docker run" not in out and "shm_size" not in out
    assert main(["lint", str(path)]) == 0  # no loader: Podman's default, for an ML image, is a warning
    assert "Podman's default 62.5 MiB for what looks like a training or inference job" in capsys.readouterr().out


def test_the_real_unit():
    [found] = files.read([str(DATA / "real" / "ollama.container")]).definitions
    facts = found.facts
    assert (facts.shm.size_bytes, facts.memory.limit_bytes) == (64000 * 1024, 3 * GiB)
    assert facts.ml_signs == ("image docker.io/ollama/ollama:latest",)
    assert [f.id for f in judge(facts, None).findings] == ["default-shm"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("[Container]\nImage=x\nnot a key\n", "u.container:3: not a KEY=VALUE line"),
        ("[Unit]\nDescription=x\n", r"u.container: no \[Container\] section"),
        ("[Container]\nShmSize=lots\n", "u.container:2: ShmSize: cannot read 'lots'"),
        ("[Container]\nPodmanArgs=--shm-size='2g\n", "u.container:2: PodmanArgs: No closing quotation"),
    ],
)
def test_bad_units_are_file_and_line(text, message):
    with pytest.raises(UsageError, match=message):
        quadlet.probe(text, "u.container")


def _in_pod(tmp_path, pod_unit: str | None, container: str = "[Container]\nImage=pytorch/pytorch:2.3.0\nPod=ml.pod\n"):
    if pod_unit is not None:
        (tmp_path / "ml.pod").write_text(pod_unit)
    (tmp_path / "train.container").write_text(container)
    return files.read([str(tmp_path)])


@pytest.mark.parametrize(
    "pod_unit, size",
    [
        ("[Pod]\nShmSize=2g\n", 2 * GiB),  # Podman 5.4+
        ("[Pod]\nPodmanArgs=--shm-size=1g\n", GiB),  # the form Podman 5.0 to 5.3 takes
        ("[Pod]\nPodName=ml\n", 64000 * 1024),  # Podman's default, the pod's
        (None, None),  # no unit beside it: the pod's, unknown
    ],
)
def test_a_container_in_a_pod_has_the_pods_shm_and_ipc(tmp_path, pod_unit, size):
    inputs = _in_pod(tmp_path, pod_unit, "[Container]\nImage=pytorch/pytorch:2.3.0\nPod=ml.pod\nShmSize=8g\n")
    [found] = inputs.definitions
    facts = found.facts
    assert facts.shm.size_bytes == size  # the container's own ShmSize=8g is not its size in a pod
    assert (facts.ipc.mode, facts.ipc.owner) == ("container", "ml.pod")
    assert ("probe-incomplete" in [f.id for f in judge(facts, None).findings]) is (size is None)
    if pod_unit is not None:  # the .pod itself is read, and said to be judged through its containers
        assert inputs.files == [
            f"{tmp_path}/ml.pod: a Quadlet .pod unit: its /dev/shm is judged with the .container "
            "units that name it (Pod=)"
        ]


def test_a_pod_members_fix_goes_in_the_pod_unit_with_the_podman_it_needs(tmp_path, capsys):
    _in_pod(tmp_path, "[Pod]\nShmSize=256m\n")
    assert main(["lint", str(tmp_path), "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]) == 1
    out = capsys.readouterr().out
    assert "on ml.pod, the IPC owner: give /dev/shm 1.5 GiB" in out
    assert "# in ml.pod's [Pod] section (Podman 5.4+; 5.0 to 5.3: PodmanArgs=--shm-size=1536m)\n" in out
    assert "          ShmSize=1536m\n" in out
    assert "--ipc=host" not in out  # a pod's member joins the pod's IPC namespace: no host alternative


def test_a_bad_pod_name_or_pod_unit_is_file_and_line(tmp_path):
    with pytest.raises(UsageError, match=r"train.container:3: Pod=ml: not the name of a Quadlet .pod unit"):
        quadlet.probe("[Container]\nImage=x\nPod=ml\n", str(tmp_path / "train.container"))
    (tmp_path / "ml.pod").write_text("[Pod]\nShmSize=lots\n")
    with pytest.raises(UsageError, match=r"ml.pod:2: .*cannot read 'lots'"):
        quadlet.probe("[Container]\nImage=x\nPod=ml.pod\n", str(tmp_path / "train.container"))


def test_a_unit_on_stdin_is_read_as_a_unit(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"[Container]\nImage=x\nShmSize=2g\n")))
    assert main(["lint", "-", "--format", "json"]) == 0
    [report] = json.loads(capsys.readouterr().out)["reports"]
    assert report["shm"]["size_bytes"] == 2 * GiB


def test_a_real_rocm_unit_in_a_pod_counts_its_amd_gpus():
    [found] = files.read([str(DATA / "real" / "immich-ml-amd.container")]).definitions
    assert (found.facts.gpus, found.facts.ipc.owner) == ("all", "immich.pod")  # AddDevice=-/dev/kfd


def test_fix_never_writes_a_pod_members_size_into_its_container_unit(tmp_path, capsys):
    _in_pod(tmp_path, "[Pod]\nShmSize=256m\n")
    before = (tmp_path / "train.container").read_text()
    main(["lint", str(tmp_path), "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB", "--fix"])
    assert "its /dev/shm is ml.pod's: size it in that unit's [Pod] section" in capsys.readouterr().err
    assert (tmp_path / "train.container").read_text() == before


@pytest.mark.parametrize(
    "lines, size, read_only",
    [
        ("ShmSize=2g\nPodmanArgs=--shm-size=1g\n", GiB, False),  # Quadlet writes PodmanArgs last: Podman takes it
        ("PodmanArgs=--shm-size=1g\nShmSize=2g\n", GiB, False),  # whatever the order of the lines
        ('ShmSize="2g"\n', 2 * GiB, False),  # Quadlet's Lookup takes the quotes off
        ("ShmSize=2g\nShmSize=\n", 64000 * 1024, False),  # the last is empty: none, Podman's default
        ("Tmpfs=/dev/shm:size=1g\nTmpfs=\n", 64000 * 1024, False),  # an empty list key clears what came before
        ("Mount=type=tmpfs,dst=/dev/shm,tmpfs-size=1g,ro=false\n", GiB, False),  # ro=false: read-write
        ("Mount=type=tmpfs,target=/dev/shm,tmpfs-size=1g,readonly\n", GiB, True),
        ("Mount=type=tmpfs,dest=/dev/shm/,tmpfs-size=1g,rw=false\n", GiB, True),  # rw=false: read-only
        ("Mount=type=tmpfs,destination=/dev//shm,tmpfs-size=256m,ro=true\n", 256 * MiB, True),
        ("Mount=type=tmpfs,destination=/dev/shm\n", None, False),  # no size: the kernel's half of memory
        ("ShmSize=0\n", None, False),  # Podman: no limit
        ("PodmanArgs=--shm-size \\\n  0\n", None, False),  # continued, and 0
    ],
)
def test_units_are_read_as_podman_reads_them(lines, size, read_only):
    facts = unit(lines)
    assert (facts.shm.size_bytes, facts.shm.read_only) == (size, read_only)
    assert (size is None) == bool(facts.unreadable)  # an unknown size is said, never taken for a small one


def test_sizes_podman_reads_as_go_units_does():
    """`1e3m` and `+1g` are sizes to RAMInBytes (a Go float); `0.` and `0.5` read as 0: no limit."""
    assert unit("ShmSize=1e3m\n").shm.size_bytes == 1000 * MiB
    assert unit("PodmanArgs=--shm-size=+1g\n").shm.size_bytes == GiB
    for zero in ("0.", "0.5", "0 B"):
        facts = unit(f"ShmSize={zero}\n")
        assert (facts.shm.size_bytes, facts.shm.detail) == (None, f"ShmSize={zero}: no limit")


def test_memory_key_and_continuations_joined_as_written():
    facts = unit("Memory=8g\nPodmanArgs=--ipc=ho\\\nst\n")  # Podman joins the parts without a space
    assert (facts.memory.limit_bytes, facts.ipc.mode) == (8 * GiB, "host")


@pytest.mark.parametrize(
    "lines, message",
    [
        ("Mount=type=tmpfs,dst=/dev/shm,read-only=true\n", "Podman refuses the option 'read-only'"),
        ("ShmSize=２g\n", r"u.container:2: ShmSize: cannot read '２g' as a size \(the engine's go-units: invalid size"),
        ("ShmSize=2Gi\n", r"ShmSize: cannot read '2Gi' as a size \(the engine's go-units: invalid suffix: 'Gi'"),
        ("PodmanArgs=--memory=' 2g'\n", r"--memory: cannot read ' 2g' as a size"),
        ("Mount=type=tmpfs,dst=/dev/shm,tmpfs-size=lots\n", "tmpfs-size: cannot read 'lots'"),
    ],
)
def test_what_podman_refuses_is_refused(lines, message):
    """Podman reads ShmSize= and its size flags with go-units' RAMInBytes (opts.MemBytes), as docker's CLI does:
    a Kubernetes suffix, a space first, a digit that is not ASCII are refused."""
    with pytest.raises(UsageError, match=message):
        quadlet.probe("[Container]\n" + lines, "u.container")


def test_drop_ins_are_merged_in_quadlets_order(tmp_path):
    path = tmp_path / "train-gpu.container"
    path.write_text("[Container]\nImage=x\nShmSize=1g\n")
    for folder, name, text in [
        ("container.d", "10-all.conf", "ShmSize=2g\n"),
        ("train-.container.d", "20-train.conf", "ShmSize=3g\n"),
        ("train-gpu.container.d", "30-this.conf", "ShmSize=4g\n"),
        ("container.d", "30-this.conf", "ShmSize=9g\n"),  # the same name: the most specific directory's is read
        ("train-gpu.container.d", "notes.txt", "ShmSize=8g\n"),  # not a .conf
    ]:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / name).write_text("[Container]\n" + text)
    [found] = quadlet.probe(path.read_text(), str(path))
    assert found.facts.shm.size_bytes == 4 * GiB and found.facts.target.line == 2
    (tmp_path / "train-gpu.container.d" / "30-this.conf").write_text("[Container]\nShmSize=\n")
    [found] = quadlet.probe(path.read_text(), str(path))
    assert found.facts.shm.size_bytes == 64000 * 1024  # the last is empty: Podman's default


# What is at /dev/shm, as real Podman 4.3.1 took each `podman create` of these flags (tests/integration/podman runs
# them again): refused with '/dev/shm: duplicate mount destination', or created with the mount that is read here.
AT_SHM = [
    ("Mount=type=tmpfs,dst=/dev/shm\nMount=type=tmpfs,dst=/dev/shm,tmpfs-size=1g\n", None),
    ("Mount=type=tmpfs,dst=/dev/shm\nPodmanArgs=--mount type=tmpfs,dst=/dev/shm/\n", None),
    ("Tmpfs=/dev/shm:size=1g\nTmpfs=/dev/shm:size=2g\n", None),
    ("Tmpfs=/dev/shm:size=1g\nTmpfs=/dev/shm:size=1g\n", (GiB, "tmpfs")),  # one, repeated
    ("Tmpfs=/dev/shm:size=1g\nMount=type=tmpfs,dst=/dev/shm,tmpfs-size=2g\n", (2 * GiB, "tmpfs")),  # the --mount's
    ("Tmpfs=/dev/shm:size=1g\nVolume=/dev/shm:/dev/shm\n", None),
    ("Volume=/dev/shm:/dev/shm\nMount=type=bind,src=/dev/shm,dst=/dev/shm\n", (None, "host")),  # one bind
    ("Volume=/dev/shm:/dev/shm\nMount=type=tmpfs,dst=/dev/shm\n", None),
    ("Volume=/dev/shm:/dev/shm\nVolume=/tmp:/dev/shm\n", None),
    ("Volume=/dev/shm:/dev/shm\nVolume=/dev/shm:/dev/shm\n", (None, "host")),
    ("Tmpfs=/dev/shm:size=1g\nMount=type=bind,src=/tmp,dst=/dev/shm\n", None),
    ("Tmpfs=/dev/shm:size=1g\nMount=type=tmpfs,dst=/tmp,tmpfs-size=2g\n", (GiB, "tmpfs")),  # elsewhere: not counted
]


@pytest.mark.parametrize("lines, shm", AT_SHM)
def test_two_mounts_at_dev_shm_are_refused_as_podman_refuses_them(lines, shm):
    if shm is None:
        with pytest.raises(UsageError, match=r"u.container:\d: 2 mounts at /dev/shm .*: Podman refuses the container"):
            quadlet.probe("[Container]\nImage=x\n" + lines, "u.container")
    else:
        [found] = quadlet.probe("[Container]\nImage=x\n" + lines, "u.container")
        assert (found.facts.shm.size_bytes, found.facts.shm.source) == shm
