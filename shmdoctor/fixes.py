"""Fix builders: what a remedy sets, in numbers (the sizes come from capacity); render/forms.py says each in the
language of the place the target is defined."""

from __future__ import annotations

from .capacity import HEADROOM, available, memory_for, shm_size_for
from .consumers import nccl_connection_bytes, nccl_proxy_bytes
from .loader import batches_in_flight, dataloader_need
from .model import Facts, Fix, Requirement
from .sizes import MiB, docker_size, format_size, page_floor
from .workload import nccl_buffsize

IPC_HOST_CAVEAT = "shares the host's IPC namespace: the container can read and write every host process's shared memory"
# A bind of /dev/shm is a mount, not a namespace: POSIX shared memory (files in /dev/shm) is shared, System V is not.
HOST_SHM_CAVEAT = (
    "binds the host's /dev/shm, not its IPC namespace: the files there (POSIX shared memory, semaphores) of the "
    "host and of every container that binds it are shared, with the host's size and leftovers; System V segments "
    "and message queues stay private"
)


# Where a platform's /dev/shm cannot be sized: what to move to instead.
FIXED_SHM = {
    "ecs": "Fargate cannot size /dev/shm: run the task on EC2 capacity (requiresCompatibilities: EC2) with "
    "linuxParameters.sharedMemorySize of",
    "batch": "Fargate cannot size /dev/shm: run the job on EC2 compute (platformCapabilities: EC2) with "
    "linuxParameters.sharedMemorySize of",
    "sagemaker": "SageMaker jobs cannot size /dev/shm (aws/sagemaker-python-sdk#937): run the loader in a container "
    "you start (ECS on EC2, EKS) with a /dev/shm of",
}


def grow_shm(need_bytes: int, facts: Facts, ranks: int = 1, basis: str | None = None) -> tuple[Fix, ...]:
    """A /dev/shm of the size a need asks (computed, measured, or named by an error message), with the memory to
    hold it, and the host's as the alternative. basis: what need_bytes is, where it is not a need."""
    size, source = shm_size_for(need_bytes, facts), facts.shm.source
    mem = facts.memory.limit_bytes
    wanted_mem = memory_for(need_bytes, facts, ranks)
    new_mem = wanted_mem if mem is not None and wanted_mem > mem else None
    why = (basis or f"{format_size(need_bytes)} needed") + " + 25%" + (", and memory to hold it" if new_mem else "")
    if "shm-fixed" in facts.flags:  # Fargate, SageMaker: no setting sizes /dev/shm there
        move = FIXED_SHM.get(facts.runtime, "this platform cannot size /dev/shm: move to one that can, with")
        return (Fix(f"{move} {format_size(size)} ({why})"),)
    if source == "system":  # not in a container: the machine's own tmpfs
        return (
            Fix(
                f"grow this machine's /dev/shm to {format_size(size)}: {why} (and its /etc/fstab entry)",
                shm_bytes=size,
                shell=f"mount -o remount,size={docker_size(size)} /dev/shm",
            ),
        )
    where = {
        "host": "stop binding the host's /dev/shm and give the container its own",
        "host-ipc": "leave the host's IPC namespace and give the container its own /dev/shm",
        "none": "give the container a /dev/shm",
    }.get(source, "give /dev/shm")
    if facts.ipc.mode == "container" and facts.ipc.owner:  # --ipc=container:X: the /dev/shm is X's
        where = f"on {facts.ipc.owner}, the IPC owner: give /dev/shm"
    grow = Fix(
        summary=f"{where} {format_size(size)}: {why}",
        shm_bytes=size,
        memory_bytes=new_mem,
        # a size means nothing under the host's IPC namespace or none: a private one first
        ipc="private" if source in ("host-ipc", "none") else None,
    )
    in_pod = facts.runtime == "podman" and facts.ipc.mode == "container" and str(facts.ipc.owner).endswith(".pod")
    if source in ("host", "host-ipc") or in_pod:  # it has the host's already; a pod's member joins the pod's IPC
        return (grow,)
    host = Fix(
        summary="use the host's /dev/shm",
        ipc="host",
        caveat=HOST_SHM_CAVEAT if facts.swarm is not None else IPC_HOST_CAVEAT,
    )
    return grow, host


def read_write(facts: Facts) -> Fix:
    """The same /dev/shm mounted read-write, said where it was mounted read-only (a tmpfs there: written again)."""
    return Fix(
        summary="mount /dev/shm read-write: drop ro / read_only / readOnly from the mount at /dev/shm",
        shm_bytes=facts.shm.size_bytes if facts.shm.source == "tmpfs" else None,
    )


def grow_memory(shm_bytes: int, facts: Facts, ranks: int = 1) -> Fix:
    limit = memory_for(shm_bytes, facts, ranks)
    return Fix(
        summary=f"memory limit of {format_size(limit)}: the loader's /dev/shm + 25%, the training process, "
        "what is in use",
        memory_bytes=limit,
    )


def env_fix(summary: str, name: str, value: str, caveat: str | None = None) -> Fix:
    """An environment variable for the job's processes."""
    return Fix(summary=summary, env=((name, value),), caveat=caveat)


NCCL_SHM_OFF = "turn NCCL's SHM transport off"
NCCL_SHM_OFF_CAVEAT = (
    "NCCL talks through sockets between these GPUs instead: much slower collectives; "
    f"each rank's proxy pool ({format_size(nccl_proxy_bytes(None))}) stays in /dev/shm"
)


def nccl_fixes(facts: Facts) -> tuple[Fix, ...]:
    """NCCL's own ways out of /dev/shm, each with its cost: smaller buffers where its own are larger than 1 MiB."""
    off = env_fix(NCCL_SHM_OFF, "NCCL_SHM_DISABLE", "1", caveat=NCCL_SHM_OFF_CAVEAT)
    now = nccl_buffsize(dict(facts.nccl_env))
    if now <= MiB:  # 1 MiB would be as large or larger
        return (off,)
    smaller = env_fix(
        f"smaller NCCL buffers: 1 MiB instead of {format_size(now)} cuts each connection from "
        f"{format_size(nccl_connection_bytes(now))} to {format_size(nccl_connection_bytes(MiB))}",
        "NCCL_BUFFSIZE",
        str(MiB),
        caveat="less bandwidth on large messages",
    )
    return off, smaller


def consumer_fixes(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    """What each consumer besides the loader offers to take less /dev/shm: NCCL's ways out where its SHM connections
    are in the need (not where SHM is off already, nor over P2P: its proxy pools stay either way)."""
    return nccl_fixes(facts) if need.nccl_shm else ()


def fit_today(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    """The largest loader settings that fit what the container has now with room to spare (no thin-headroom),
    each knob turned down alone, beside what the other consumers take."""
    loader = need.loader
    cap = available(facts, need.ranks)
    if cap is None or loader is None or loader.num_workers == 0:
        return ()
    others = need.failing_bytes - dataloader_need(loader).bytes  # the other consumers, other loaders alive with it
    usable = int(cap * HEADROOM) - others
    if usable < 0:  # the others alone take more than that: no loader setting fits (at 0, none but no workers)
        return ()
    # Closed form, not a search: (p·w + held)·b·ranks <= usable  <=>  p·w <= usable // (b·ranks) - held.
    held = 0 if loader.pin_memory else 1
    room = usable // (loader.batch_bytes * loader.ranks) - held  # batches in flight that fit, beyond the held one
    settings = []
    w = min(loader.num_workers - 1, room // loader.prefetch_factor)  # room -1 (not even the held one): w < 0
    if w > 0:
        settings.append({"num_workers": w})
    p = min(loader.prefetch_factor - 1, room // loader.num_workers)
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
