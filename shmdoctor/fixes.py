"""Fix builders: pasteable remedies, in the language of each place a container is defined (the sizes they ask for
come from capacity)."""

from __future__ import annotations

from .capacity import HEADROOM, available, memory_for, shm_size_for
from .consumers import nccl_connection_bytes, nccl_proxy_bytes
from .loader import batches_in_flight
from .model import Facts, Fix, Requirement
from .sizes import MiB, docker_size, format_size, k8s_quantity, page_floor, parse_size

IPC_HOST_CAVEAT = "shares the host's IPC namespace: the container can read and write every host process's shared memory"
# A bind of /dev/shm is a mount, not a namespace: POSIX shared memory (files in /dev/shm) is shared, System V is not.
HOST_SHM_CAVEAT = (
    "binds the host's /dev/shm, not its IPC namespace: the files there (POSIX shared memory, semaphores) of the "
    "host and of every container that binds it are shared, with the host's size and leftovers; System V segments "
    "and message queues stay private"
)


# Swarm ignores `ipc: host`: bind the host's /dev/shm instead.
SWARM_HOST_SHM = "volumes:\n  - type: bind\n    source: /dev/shm\n    target: /dev/shm"


def kubernetes_volume(size: int, memory_limit: int | None = None) -> str:
    """The emptyDir at /dev/shm, and the memory limit it needs where the container has one (none is invented:
    a limit that held only /dev/shm would OOM-kill a process that holds a model)."""
    limit = (
        f"resources:\n  limits: {{memory: {k8s_quantity(memory_limit)}}}  # sizeLimit + what the process itself needs\n"
        if memory_limit
        else "# a memory limit, where the container has one, must hold sizeLimit + what the process itself needs\n"
    )
    return (
        "# in the pod spec: a memory-backed emptyDir\n"
        "volumes:\n"
        "  - name: dshm\n"
        f"    emptyDir: {{medium: Memory, sizeLimit: {k8s_quantity(size)}}}\n"
        "# in the container that runs the DataLoader: mount it at /dev/shm; its pages count against the limit\n"
        "volumeMounts:\n"
        "  - {name: dshm, mountPath: /dev/shm}\n" + limit
    )


def compose_shm(size: int, facts: Facts) -> str:
    """compose's way to a /dev/shm of `size`: shm_size, unless a tmpfs overrides it there or Swarm ignores it."""
    owner = (
        f"# on service {facts.ipc.owner}, the IPC owner\n" if facts.ipc.mode == "container" and facts.ipc.owner else ""
    )
    if facts.swarm is not None:  # docker stack ignores shm_size (moby#26714); a tmpfs mount is honoured
        return (
            f"volumes:  # Swarm ignores shm_size: mount a tmpfs at /dev/shm\n  - type: tmpfs\n"
            f"    target: /dev/shm\n    tmpfs: {{size: {size}}}  # {docker_size(size)}"
        )
    if facts.shm.source == "tmpfs":  # a tmpfs at /dev/shm overrides shm_size: grow the tmpfs itself
        return f"tmpfs:\n  - /dev/shm:size={docker_size(size)}"
    if facts.ipc.mode in ("host", "none"):  # shm_size means nothing there
        owner = f"ipc: private  # instead of ipc: {facts.ipc.mode}\n"
    return owner + f'shm_size: "{docker_size(size)}"'


def compose_memory(limit: int, facts: Facts) -> str:
    """compose's memory limit, where the file sets it: deploy.resources.limits.memory (flagged by lint) or mem_limit."""
    if "compose-deploy-memory" in facts.flags or facts.swarm is not None:
        return f'deploy:\n  resources:\n    limits:\n      memory: "{docker_size(limit)}"'
    return f'mem_limit: "{docker_size(limit)}"'


# Where a platform's /dev/shm cannot be sized: what to move to instead.
FIXED_SHM = {
    "ecs": "Fargate cannot size /dev/shm: run the task on EC2 capacity (requiresCompatibilities: EC2) with "
    "linuxParameters.sharedMemorySize of",
    "sagemaker": "SageMaker jobs cannot size /dev/shm (aws/sagemaker-python-sdk#937): run the loader in a container "
    "you start (ECS on EC2, EKS) with a /dev/shm of",
}


def in_platform(fix: Fix, platform: str) -> str | None:
    """A fix's docker flags said in a job definition's own language: ECS / Batch JSON, Azure ML YAML, a Quadlet
    unit; None where the fix has nothing that platform takes."""
    lines = []
    args = list(fix.docker_args)
    for i, arg in enumerate(args):
        key, _, value = arg.partition("=")
        if platform == "ecs" and key == "--shm-size":
            lines.append(f'"linuxParameters": {{"sharedMemorySize": {-(-parse_size(value) // MiB)}}}')
        elif platform == "ecs" and key == "--memory":
            lines.append(f'"memory": {-(-parse_size(value) // MiB)}')
        elif platform == "azureml" and key == "--shm-size":
            lines.append(f"resources:\n  shm_size: {value}")
        elif platform == "quadlet" and key == "--shm-size":
            lines.append(f"ShmSize={value}")
        elif platform == "quadlet" and arg == "--tmpfs":
            lines.append(f"Tmpfs={args[i + 1]}")
        elif platform == "quadlet" and key in ("--ipc", "--memory"):
            lines.append(f"PodmanArgs={arg}")
    return "\n".join(lines) or None


def grow_shm(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    """A /dev/shm of the size the need asks, said for where this one comes from, and the host's as the alternative."""
    return grow_shm_to(need.bytes, facts, need.ranks)


def grow_shm_to(need_bytes: int, facts: Facts, ranks: int = 1) -> tuple[Fix, ...]:
    """grow_shm for a need known only as bytes (a measured peak, the size an error message names)."""
    size, source = shm_size_for(need_bytes, facts), facts.shm.source
    mem = facts.memory.limit_bytes
    wanted_mem = memory_for(need_bytes, facts, ranks)
    new_mem = wanted_mem if mem is not None and wanted_mem > mem else None
    why = f"{format_size(need_bytes)} needed + 25%" + (", and memory to hold it" if new_mem else "")
    if "shm-fixed" in facts.flags:  # Fargate, SageMaker: no setting sizes /dev/shm there
        move = FIXED_SHM.get(facts.runtime, "this platform cannot size /dev/shm: move to one that can, with")
        return (Fix(f"{move} {format_size(size)} ({why})"),)
    if source == "system":  # not in a container: the machine's own tmpfs
        return (
            Fix(
                f"grow this machine's /dev/shm to {format_size(size)}: {why} (and its /etc/fstab entry)",
                shell=f"mount -o remount,size={docker_size(size)} /dev/shm",
            ),
        )
    where = {
        "host": "drop -v /dev/shm:/dev/shm and give the container its own /dev/shm",
        "host-ipc": "drop --ipc=host and give the container its own /dev/shm",
        "none": "give the container a /dev/shm",
    }.get(source, "give /dev/shm")
    if facts.ipc.mode == "container" and facts.ipc.owner:  # --ipc=container:X: the /dev/shm is X's
        where = f"on {facts.ipc.owner}, the IPC owner: give /dev/shm"
    if source == "tmpfs":  # a tmpfs at /dev/shm overrides --shm-size: grow the tmpfs itself
        args: tuple[str, ...] = ("--tmpfs", f"/dev/shm:size={docker_size(size)}")
    else:  # --shm-size means nothing under --ipc=host or --ipc=none: a private IPC namespace first
        args = (("--ipc=private",) if source in ("host-ipc", "none") else ()) + (f"--shm-size={docker_size(size)}",)
    grow = Fix(
        summary=f"{where} {format_size(size)}: {why}",
        docker_args=args + ((f"--memory={docker_size(new_mem)}",) if new_mem else ()),
        compose=compose_shm(size, facts) + ("\n" + compose_memory(new_mem, facts) if new_mem else ""),
        kubernetes=kubernetes_volume(size, new_mem or mem),
    )
    if source in ("host", "host-ipc"):  # it has the host's already
        return (grow,)
    host = Fix(
        summary="use the host's /dev/shm",
        docker_args=("--ipc=host",),
        compose=SWARM_HOST_SHM if facts.swarm is not None else "ipc: host",
        kubernetes="hostIPC: true  # pod spec",
        caveat=HOST_SHM_CAVEAT if facts.swarm is not None else IPC_HOST_CAVEAT,
    )
    return grow, host


def read_write(facts: Facts) -> Fix:
    """The same /dev/shm mounted read-write, said where it was mounted read-only."""
    size = facts.shm.size_bytes if facts.shm.source == "tmpfs" else None
    return Fix(
        summary="mount /dev/shm read-write: drop ro / read_only / readOnly from the mount at /dev/shm",
        docker_args=("--tmpfs", f"/dev/shm:size={docker_size(size)}") if size else (),
        compose=f"tmpfs:\n  - /dev/shm:size={docker_size(size)}" if size else None,
    )


def grow_memory(need: Requirement, facts: Facts) -> Fix:
    return grow_memory_for(need.bytes, facts, need.ranks)


def grow_memory_for(shm_bytes: int, facts: Facts, ranks: int = 1) -> Fix:
    limit = memory_for(shm_bytes, facts, ranks)
    return Fix(
        summary=f"memory limit of {format_size(limit)}: the loader's /dev/shm + 25%, the training process, "
        "what is in use",
        docker_args=(f"--memory={docker_size(limit)}",),
        compose=compose_memory(limit, facts),
        kubernetes=f"resources:\n  limits: {{memory: {k8s_quantity(limit)}}}\n",
    )


def env_fix(summary: str, name: str, value: str, caveat: str | None = None) -> Fix:
    """An environment variable for the job's processes, in each place's language."""
    return Fix(
        summary=summary,
        docker_args=("-e", f"{name}={value}"),
        compose=f'environment:\n  {name}: "{value}"',
        kubernetes=f'env:\n  - {{name: {name}, value: "{value}"}}',
        caveat=caveat,
    )


NCCL_SHM_OFF = "turn NCCL's SHM transport off"
NCCL_SHM_OFF_CAVEAT = (
    "NCCL talks through sockets between these GPUs instead: much slower collectives; "
    f"each rank's proxy pool ({format_size(nccl_proxy_bytes(None))}) stays in /dev/shm"
)


def nccl_fixes(facts: Facts) -> tuple[Fix, ...]:
    """NCCL's own ways out of /dev/shm, each with its cost."""
    default, small = nccl_connection_bytes(), nccl_connection_bytes(MiB)
    return (
        env_fix(NCCL_SHM_OFF, "NCCL_SHM_DISABLE", "1", caveat=NCCL_SHM_OFF_CAVEAT),
        env_fix(
            f"smaller NCCL buffers: 1 MiB instead of 4 MiB cuts each connection from {format_size(default)} "
            f"to {format_size(small)}",
            "NCCL_BUFFSIZE",
            str(MiB),
            caveat="less bandwidth on large messages",
        ),
    )


def consumer_fixes(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    """What each consumer besides the loader offers to take less /dev/shm."""
    nccl = need.term("nccl")
    return nccl_fixes(facts) if nccl is not None and nccl.bytes and need.nccl_fallback == 0 else ()


def fit_today(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    """The largest loader settings that fit what the container has now with room to spare (no thin-headroom),
    each knob turned down alone, beside what the other consumers take."""
    loader = need.loader
    cap = available(facts, need.ranks)
    if cap is None or loader is None or loader.num_workers == 0:
        return ()
    others = sum(n.bytes for n in need.breakdown if n.fails and n.term != "dataloader")
    usable = int(cap * HEADROOM) - others
    if usable <= 0:  # the others alone take it all: no loader setting fits
        return ()
    # Closed form, not a search: (p·w + held)·b·ranks <= usable  <=>  p·w <= usable // (b·ranks) - held.
    held = 0 if loader.pin_memory else 1
    room = usable // (loader.batch_bytes * loader.ranks) - held  # batches in flight that fit, beyond the held one
    settings = []
    w = min(loader.num_workers - 1, max(room, 0) // loader.prefetch_factor)
    if w > 0:
        settings.append({"num_workers": w})
    p = min(loader.prefetch_factor - 1, max(room, 0) // loader.num_workers)
    if p > 0:
        settings.append({"prefetch_factor": p})
    if loader.sample_bytes:
        in_flight = batches_in_flight(loader.num_workers, loader.prefetch_factor, loader.pin_memory)
        bs = page_floor(usable // (in_flight * loader.ranks)) // loader.sample_bytes
        if 0 < bs < loader.batch_size:
            settings.append({"batch_size": bs})
    if not settings:
        settings.append({"num_workers": 0})
    summary = f"fits the {format_size(cap)} there is today"
    return tuple(Fix(summary=summary, loader=s) for s in settings)
