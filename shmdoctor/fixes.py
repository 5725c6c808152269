"""Fix builders: pasteable remedies, in the language of each place a container is defined."""
from __future__ import annotations

from .loader import batches_in_flight
from .model import Facts, Fix, Requirement
from .sizes import docker_size, format_size, k8s_quantity, nice_size

MARGIN = 1.25  # over the computed need: allocator slack, a validation iterator, a second look
IPC_HOST_CAVEAT = (
    "--ipc=host shares the host's IPC namespace: processes in the container see and can write the host's and other "
    "containers' shared memory and System V IPC. Avoid it on shared or multi-tenant hosts."
)


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


def kubernetes_volume(size: int, memory_limit: int | None = None) -> str:
    limit = memory_limit or nice_size(int(size * 1.5))
    return (
        "# pod spec: a memory-backed emptyDir at /dev/shm (its pages count against the memory limit)\n"
        "volumes:\n"
        "  - name: dshm\n"
        f"    emptyDir: {{medium: Memory, sizeLimit: {k8s_quantity(size)}}}\n"
        "containers:\n"
        "  - name: trainer\n"
        "    volumeMounts:\n"
        "      - {name: dshm, mountPath: /dev/shm}\n"
        "    resources:\n"
        f"      limits: {{memory: {k8s_quantity(limit)}}}  # at least sizeLimit + what the process itself needs\n"
    )


def grow_shm(need: Requirement, facts: Facts) -> tuple[Fix, ...]:
    size = shm_size_for(need, facts)
    mem = facts.memory.limit_bytes
    grow_memory = mem is not None and mem < size + (facts.memory.used_bytes or 0)
    return (
        Fix(
            summary=f"give the container {format_size(size)} of /dev/shm (need {format_size(need.bytes)} + 25% margin)",
            docker_args=(f"--shm-size={docker_size(size)}",)
            + ((f"--memory={docker_size(nice_size(int((mem or 0) + size)))}",) if grow_memory else ()),
            compose=f'shm_size: "{docker_size(size)}"',
            kubernetes=kubernetes_volume(size, nice_size(int((mem or 0) + size)) if grow_memory else None),
        ),
        Fix(
            summary="or share the host's /dev/shm",
            docker_args=("--ipc=host",),
            compose="ipc: host",
            kubernetes="hostIPC: true  # pod spec",
            caveat=IPC_HOST_CAVEAT,
        ),
    )


def grow_memory(need: Requirement, facts: Facts) -> Fix:
    limit = nice_size(int(((facts.memory.used_bytes or 0) + need.bytes) * MARGIN))
    return Fix(
        summary=f"raise the memory limit to at least {format_size(limit)}: /dev/shm pages are charged to it, "
        "plus what the training process itself needs",
        docker_args=(f"--memory={docker_size(limit)}",),
        compose=f'mem_limit: "{docker_size(limit)}"',
        kubernetes=f"resources:\n  limits: {{memory: {k8s_quantity(limit)}}}\n",
    )


def fit_today(need: Requirement, facts: Facts) -> Fix | None:
    """The largest loader settings that fit the capacity we have now, each knob turned down alone."""
    cap = capacity(facts)
    loader = need.loader
    if cap is None or loader.num_workers == 0:
        return None

    def fits(w: int, p: int, b: int = loader.batch_bytes) -> bool:
        return batches_in_flight(w, p, loader.pin_memory) * b * loader.ranks <= cap

    options: list[str] = []
    settings: dict[str, int] = {}
    w = next((w for w in range(loader.num_workers - 1, 0, -1) if fits(w, loader.prefetch_factor)), 0)
    if w:
        options.append(f"num_workers={w}")
        settings["num_workers"] = w
    p = next((p for p in range(loader.prefetch_factor - 1, 0, -1) if fits(loader.num_workers, p)), 0)
    if p:
        options.append(f"prefetch_factor={p}")
        settings["prefetch_factor"] = p
    if loader.sample_bytes:
        per_batch = cap // max(1, batches_in_flight(loader.num_workers, loader.prefetch_factor, loader.pin_memory))
        bs = per_batch // loader.ranks // loader.sample_bytes
        if 0 < bs < loader.batch_size:
            options.append(f"batch_size={bs}")
            settings["batch_size"] = bs
    if not options:
        return Fix(
            summary=f"or, without changing the container: num_workers=0 ({format_size(cap)} available fits no "
            "worker's batches; loading moves into the training process)",
            loader={"num_workers": 0},
        )
    return Fix(
        summary=f"or, without changing the container ({format_size(cap)} available): " + " or ".join(options),
        loader=settings,
    )
