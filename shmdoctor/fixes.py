"""Fix builders: pasteable remedies, in the language of each place a container is defined."""
from __future__ import annotations

from .loader import batches_in_flight
from .model import Facts, Fix, Requirement
from .sizes import PAGE, docker_size, format_size, k8s_quantity, nice_size

MARGIN = 1.25  # over the computed need: allocator slack, a validation iterator, a second look
IPC_HOST_CAVEAT = "shares the host's IPC namespace: the container can read and write every host process's shared memory"


# Swarm ignores `ipc: host`: bind the host's /dev/shm instead.
SWARM_HOST_SHM = "volumes:\n  - type: bind\n    source: /dev/shm\n    target: /dev/shm"


def capacity(facts: Facts) -> int | None:
    """The most /dev/shm a loader can take today: free space, capped by the memory cgroup's headroom."""
    caps = []
    if facts.shm.present and facts.shm.free_bytes is not None:
        caps.append(facts.shm.free_bytes)
    elif not facts.shm.present:
        caps.append(0)
    if facts.memory.limit_bytes is not None:
        caps.append(max(0, facts.memory.limit_bytes - (facts.memory.used_bytes or 0)))
    return min(caps) if caps else None


def shm_size_for(need: Requirement, facts: Facts) -> int:
    """--shm-size to ask for: the need plus what others already use, with margin, rounded to a size people type."""
    return nice_size(int((need.bytes + (facts.shm.used_bytes or 0)) * MARGIN))


def page_floor(n: int) -> int:
    return n // PAGE * PAGE


def kubernetes_volume(size: int, memory_limit: int | None = None) -> str:
    limit = memory_limit or nice_size(int(size * 1.5))
    return (
        "# in the pod spec: a memory-backed emptyDir\n"
        "volumes:\n"
        "  - name: dshm\n"
        f"    emptyDir: {{medium: Memory, sizeLimit: {k8s_quantity(size)}}}\n"
        "# in the container that runs the DataLoader: mount it at /dev/shm; its pages count against the limit\n"
        "volumeMounts:\n"
        "  - {name: dshm, mountPath: /dev/shm}\n"
        "resources:\n"
        f"  limits: {{memory: {k8s_quantity(limit)}}}  # at least sizeLimit + what the process itself needs\n"
    )


def compose_shm(size: int, facts: Facts) -> str:
    """compose's way to a /dev/shm of `size`: shm_size, unless a tmpfs overrides it there or Swarm ignores it."""
    owner = f"# on service {facts.ipc.owner}, the IPC owner\n" if facts.ipc.mode == "container" and facts.ipc.owner else ""
    if "swarm" in facts.flags:  # docker stack ignores shm_size (moby#26714); a tmpfs mount is honoured
        return (f"volumes:  # Swarm ignores shm_size: mount a tmpfs at /dev/shm\n  - type: tmpfs\n"
                f"    target: /dev/shm\n    tmpfs: {{size: {size}}}  # {docker_size(size)}")
    if facts.shm.source == "tmpfs":  # a tmpfs at /dev/shm overrides shm_size: grow the tmpfs itself
        return f"tmpfs:\n  - /dev/shm:size={docker_size(size)}"
    return owner + f'shm_size: "{docker_size(size)}"'


def compose_memory(limit: int, facts: Facts) -> str:
    """compose's memory limit, where the file sets it: deploy.resources.limits.memory (flagged by lint) or mem_limit."""
    if "compose-deploy-memory" in facts.flags or "swarm" in facts.flags:
        return f'deploy:\n  resources:\n    limits:\n      memory: "{docker_size(limit)}"'
    return f'mem_limit: "{docker_size(limit)}"'


def grow_shm(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    size = shm_size_for(need, facts)
    mem = facts.memory.limit_bytes
    memory_too = mem is not None and mem < size + (facts.memory.used_bytes or 0)
    new_mem = nice_size(int((mem or 0) + size)) if memory_too else None
    if facts.shm.source == "tmpfs":  # a tmpfs at /dev/shm overrides --shm-size: grow the tmpfs itself
        args: tuple[str, ...] = ("--tmpfs", f"/dev/shm:size={docker_size(size)}")
    else:
        args = (f"--shm-size={docker_size(size)}",)
    if facts.shm.source == "host":
        args = ("(drop -v /dev/shm:/dev/shm)",) + args
    if facts.ipc.mode == "container" and facts.ipc.owner:  # --ipc=container:X: the /dev/shm is X's
        args = (f"(on {facts.ipc.owner}, the IPC owner)",) + args
    if facts.ipc.mode == "none" and not facts.shm.present:  # --shm-size means nothing under --ipc=none
        args = ("--ipc=private",) + args
    why = f"{format_size(need.bytes)} needed + 25%" + (", and memory to hold it" if memory_too else "")
    return (
        Fix(
            summary=f"give /dev/shm {format_size(size)}: {why}",
            docker_args=args + ((f"--memory={docker_size(new_mem)}",) if new_mem else ()),
            compose=compose_shm(size, facts) + ("\n" + compose_memory(new_mem, facts) if new_mem else ""),
            kubernetes=kubernetes_volume(size, new_mem or mem),
        ),
        Fix(
            summary="use the host's /dev/shm",
            docker_args=("--ipc=host",),
            compose=SWARM_HOST_SHM if "swarm" in facts.flags else "ipc: host",
            kubernetes="hostIPC: true  # pod spec",
            caveat=IPC_HOST_CAVEAT,
        ),
    )


def grow_memory(need: Requirement, facts: Facts) -> Fix:
    limit = nice_size(int(((facts.memory.used_bytes or 0) + need.bytes) * MARGIN))
    return Fix(
        summary=f"memory limit of {format_size(limit)} or more: /dev/shm pages are charged to it, "
        "as is the training process",
        docker_args=(f"--memory={docker_size(limit)}",),
        compose=compose_memory(limit, facts),
        kubernetes=f"resources:\n  limits: {{memory: {k8s_quantity(limit)}}}\n",
    )


def fit_today(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    """The largest loader settings that fit what the container has now, each knob turned down alone."""
    cap = capacity(facts)
    loader = need.loader
    if cap is None or loader.num_workers == 0:
        return ()

    def fits(w: int, p: int) -> bool:
        return batches_in_flight(w, p, loader.pin_memory) * loader.batch_bytes * loader.ranks <= cap

    settings = []
    w = next((w for w in range(loader.num_workers - 1, 0, -1) if fits(w, loader.prefetch_factor)), 0)
    if w:
        settings.append({"num_workers": w})
    p = next((p for p in range(loader.prefetch_factor - 1, 0, -1) if fits(loader.num_workers, p)), 0)
    if p:
        settings.append({"prefetch_factor": p})
    if loader.sample_bytes:
        in_flight = batches_in_flight(loader.num_workers, loader.prefetch_factor, loader.pin_memory)
        bs = page_floor(cap // (in_flight * loader.ranks)) // loader.sample_bytes
        if 0 < bs < loader.batch_size:
            settings.append({"batch_size": bs})
    if not settings:
        settings.append({"num_workers": 0})
    summary = f"fits the {format_size(cap)} there is today"
    return tuple(Fix(summary=summary, loader=s) for s in settings)
