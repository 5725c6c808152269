"""Facts about the machine or container shmdoctor runs in: /proc, statvfs and the cgroup, nothing else."""

from __future__ import annotations

import os
import resource
from collections.abc import Mapping

from ..errors import UsageError
from ..model import SHM, Facts, Ipc, Memory, Runtime, Shm, ShmSource, Target
from . import cgroup, logind, mountinfo
from .workload import AMD_VISIBLE

# PROC_IPC_INIT_INO: the inode of the host's (initial) IPC namespace.
HOST_IPC_INODE = 4026531839


SAGEMAKER_MARKS = ("SM_TRAINING_ENV", "SM_CURRENT_HOST", "SAGEMAKER_PROGRAM", "SAGEMAKER_BIND_TO_PORT")


def is_sagemaker(root: str = "/") -> bool:
    """A SageMaker training job or endpoint: the names of the variables it sets (never their values), or its
    resource config."""
    return any(name in os.environ for name in SAGEMAKER_MARKS) or os.path.exists(
        os.path.join(root, "opt/ml/input/config/resourceconfig.json")
    )


def runtime(root: str = "/") -> Runtime:
    """docker | podman | kubernetes | container | none, from the marks each runtime leaves (Podman writes
    /run/.containerenv and sets container=podman in the environment)."""
    if os.environ.get("KUBERNETES_SERVICE_HOST") or os.path.isdir(os.path.join(root, "var/run/secrets/kubernetes.io")):
        return "kubernetes"
    if is_sagemaker(root):  # its containers run under Docker: told first
        return "sagemaker"
    if os.path.exists(os.path.join(root, ".dockerenv")):
        return "docker"
    marked = os.environ.get("container")  # noqa: SIM112 (podman and systemd-nspawn set it lowercase)
    if os.path.exists(os.path.join(root, "run/.containerenv")) or marked == "podman":
        return "podman"
    if marked:
        return "container"
    try:
        with open(os.path.join(root, "proc/1/cgroup")) as f:
            text = f.read()
    except OSError:
        return "none"
    marks: tuple[tuple[str, Runtime], ...] = (
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("containerd", "container"),
        ("lxc", "container"),
    )
    for mark, name in marks:
        if mark in text:
            return name
    return "none"


def shm_usage(path: str = SHM) -> tuple[int, int, int]:
    """(size, used, free) from statvfs: the default sharing strategy unlinks its segments, so a listing shows none."""
    st = os.statvfs(path)
    size, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return size, size - st.f_bfree * st.f_frsize, free


def probe(shm_path: str = SHM) -> Facts:
    unreadable: list[str] = []
    kind = runtime()
    in_container = kind != "none"

    try:
        ipc_host = os.stat("/proc/self/ns/ipc").st_ino == HOST_IPC_INODE
    except OSError as e:
        ipc_host = False
        unreadable.append(f"IPC namespace (/proc/self/ns/ipc: {e.strerror})")

    try:
        with open("/proc/self/mountinfo") as f:
            mount = mountinfo.find(mountinfo.parse(f.read()), shm_path)
    except OSError as e:
        mount = None
        unreadable.append(f"mounts (/proc/self/mountinfo: {e.strerror})")
    except UsageError as e:  # a line this parser does not know: a fact missing, not bad input
        mount = None
        unreadable.append(f"mounts (/proc/self/mountinfo: {e})")
    present = os.path.isdir(shm_path)
    source: ShmSource
    source, detail = mountinfo.shm_source(mount, in_container=in_container, ipc_host=ipc_host, runtime=kind)
    if mount is None and present:
        # /dev/shm exists but is no mount point: a plain directory on the root filesystem.
        source, detail = "unknown", f"{shm_path} is a directory on the root filesystem, not a tmpfs"

    size = used = free = None
    if present:
        try:
            size, used, free = shm_usage(shm_path)
        except OSError as e:
            unreadable.append(f"/dev/shm usage (statvfs: {e.strerror})")
    read_only = present and mount is not None and "ro" in mount.options
    shm = Shm(present, size, used, free, source, detail, read_only=read_only)

    if ipc_host:
        ipc = Ipc("host")
    elif in_container and not present:
        ipc = Ipc("none")
    else:
        ipc = Ipc("private" if in_container else "host")

    limit, usage = cgroup.memory()
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return Facts(
        target=Target(kind="local", name=os.uname().nodename, id=None),
        shm=shm,
        ipc=ipc,
        memory=Memory(limit_bytes=limit, used_bytes=usage, machine_bytes=_machine_memory()),
        runtime=kind,
        nofile=None if nofile == resource.RLIM_INFINITY else nofile,
        cpus=cgroup.cpus(),
        unreadable=tuple(unreadable),
        # SageMaker exposes no /dev/shm setting (aws/sagemaker-python-sdk#937): no fix may ask for a size
        flags=frozenset({"shm-fixed"}) if kind == "sagemaker" else frozenset(),
        remove_ipc=logind.remove_ipc(os.getuid()) if kind == "none" else None,
        gpu_count=gpu_count(os.environ),
        nccl_env=nccl_env(os.environ),
    )


def _machine_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return None


def nccl_env(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The NCCL_* variables, which decide NCCL's transport and buffers (kept in the facts, never printed)."""
    return tuple(sorted((k, v) for k, v in environ.items() if k.startswith("NCCL_")))[:64]


def gpu_count(environ: Mapping[str, str], dev: str = "/dev") -> int | None:
    """The GPUs this process's job sees: torchrun's LOCAL_WORLD_SIZE, else the devices CUDA_VISIBLE_DEVICES or
    NVIDIA_VISIBLE_DEVICES (or AMD's: ROCm) name, else the /dev/nvidiaN device files (or ROCm's render nodes beside
    /dev/kfd); None where nothing says."""
    local = environ.get("LOCAL_WORLD_SIZE", "").strip()
    if local.isdigit() and 0 < int(local) <= 4096:
        return int(local)
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", *AMD_VISIBLE):
        visible = environ.get(name, "").strip()
        if visible and visible not in ("all", "void", "none", "NoDevFiles"):
            return len([d for d in visible.split(",") if d.strip()][:4096]) or None
    try:
        count = sum(1 for n in os.listdir(dev) if n.startswith("nvidia") and n[6:].isdigit())
        if not count and os.path.exists(os.path.join(dev, "kfd")):  # ROCm: a render node a GPU
            count = sum(1 for n in os.listdir(os.path.join(dev, "dri")) if n.startswith("renderD"))
    except OSError:
        return None
    return count or None
