"""What --fix writes and says where the size is not the target's own key: a run's --tmpfs at /dev/shm (its size=
option, the other options kept), a compose service whose /dev/shm is another service's (ipc: service:NAME, the
owner's shm_size). Expected files and lines written out by hand."""

from __future__ import annotations

from shmdoctor.cli import main

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin


def fix(tmp_path, capsys, name: str, text: str) -> tuple[str, str]:
    path = tmp_path / name
    path.write_text(text)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    return path.read_text(), capsys.readouterr().err


def test_a_runs_tmpfs_at_dev_shm_gets_its_size_option(tmp_path, capsys):
    after, err = fix(tmp_path, capsys, "run.sh", "#!/bin/sh\ndocker run --tmpfs /dev/shm:size=64m pytorch/pytorch\n")
    assert after == "#!/bin/sh\ndocker run --tmpfs /dev/shm:size=1536m pytorch/pytorch\n"
    assert f"fixed {tmp_path / 'run.sh'}:2: --tmpfs /dev/shm:size=1536m\n" in err
    after, err = fix(tmp_path, capsys, "run.sh", "#!/bin/sh\ndocker run --shm-size 64m pytorch/pytorch\n")
    assert after == "#!/bin/sh\ndocker run --shm-size 1536m pytorch/pytorch\n"
    assert f"fixed {tmp_path / 'run.sh'}:2: --shm-size=1536m\n" in err


def test_a_service_sharing_anothers_ipc_gets_the_owner_sized(tmp_path, capsys):
    text = (
        "services:\n  train:\n    image: pytorch/pytorch\n    ipc: service:shm\n"
        "  shm:\n    image: busybox\n    ipc: shareable\n    shm_size: 64m\n"
    )
    after, err = fix(tmp_path, capsys, "compose.yaml", text)
    assert after == text.replace("shm_size: 64m", "shm_size: 1536m")
    assert f"fixed {tmp_path / 'compose.yaml'}:train: on service shm, the IPC owner, shm_size: 1536m\n" in err


def test_a_service_sizing_its_own_says_no_owner(tmp_path, capsys):
    text = "services:\n  train:\n    image: pytorch/pytorch\n    ipc: shareable\n    shm_size: 64m\n"
    after, err = fix(tmp_path, capsys, "compose.yaml", text)
    assert after == text.replace("shm_size: 64m", "shm_size: 1536m")
    assert f"fixed {tmp_path / 'compose.yaml'}:train: shm_size: 1536m\n" in err


def test_a_warned_target_is_fixed_as_a_failing_one(tmp_path, capsys):
    """1 GiB for 900 MiB: a warning (no 25% margin), and the margin is what --fix writes."""
    text = "services:\n  t:\n    image: pytorch/pytorch\n    shm_size: 1g\n"
    after, err = fix(tmp_path, capsys, "compose.yaml", text)
    assert after == text.replace("shm_size: 1g", "shm_size: 1536m")
    assert f"fixed {tmp_path / 'compose.yaml'}:t: shm_size: 1536m\n" in err


def test_a_pods_new_volume_takes_the_first_name_no_volume_has(tmp_path, capsys):
    """dshm and shmdoctor-dshm are other volumes of the pod: the /dev/shm volume is dshm-2."""
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n    - name: t\n"
        "      image: pytorch/pytorch\n  volumes:\n    - name: dshm\n      configMap: {name: a}\n"
        "    - name: shmdoctor-dshm\n      configMap: {name: b}\n"
    )
    after, _ = fix(tmp_path, capsys, "pod.yaml", text)
    mount = "      volumeMounts:\n        - name: dshm-2\n          mountPath: /dev/shm\n"
    volume = "    - name: dshm-2\n      emptyDir:\n        medium: Memory\n        sizeLimit: 1536Mi\n"
    assert after == text.replace("  volumes:\n", mount + "  volumes:\n") + volume
