"""The rule catalogue: each rule has a stable ID and a severity, reads Facts and the Requirement, and returns
its finding (message and fixes) or None. Pure functions: no I/O here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Optional, TypeVar

from . import capacity, consumers, fixes
from .model import (
    ENGINE_DEFAULT_SHM,
    PODMAN_DEFAULT_SHM,
    SEVERITY_RANK,
    SHM_SIZE_UNKNOWN,
    Facts,
    Finding,
    Fix,
    Report,
    Requirement,
    Serving,
    Severity,
    Value,
)
from .sizes import MiB, format_size, page_floor

Hit = Optional[tuple[str, tuple[Fix, ...]]]  # the finding's message and fixes, or None: the rule does not fire
Check = Callable[[Facts, Optional[Requirement]], Hit]
AnyCheck = TypeVar("AnyCheck", bound=Callable[..., Hit])


@dataclass(frozen=True, eq=False, repr=False)
class Rule(Value):
    """One rule of the catalogue: its ID, severity, summary and check."""

    id: str
    severity: Severity
    summary: str
    check: Callable[..., Hit]  # Check for the facts' rules; bench's take what a sweep measured (rules_bench)
    on: Literal["facts", "bench"] = "facts"


RULES: list[Rule] = []
DEFAULT_SIZE = format_size(ENGINE_DEFAULT_SHM)
LOADER_EXAMPLE = "shmdoctor.loader=batch_size=100,num_workers=4,sample_bytes=1MiB"
FD_BASE = 256  # descriptors a training process holds before its loader's segments


def rule(
    id: str, severity: Severity, summary: str, on: Literal["facts", "bench"] = "facts"
) -> Callable[[AnyCheck], AnyCheck]:
    def register(check: AnyCheck) -> AnyCheck:
        RULES.append(Rule(id, severity, summary, check, on))
        return check

    return register


def _loading(need: Requirement | None) -> Requirement | None:
    """The need where something goes through /dev/shm (a loader with workers, NCCL's SHM transport, a server's
    rings, Ray's store); None without a need, or where everything stays in the process."""
    return need if need is not None and need.bytes > 0 else None


def _may_load(facts: Facts) -> bool:
    """Without a loader, whether the target may run one: this machine, or what looks like a training or inference
    job (an ML image or command, GPUs). A web server or an exporter is fine with a small /dev/shm."""
    return (
        facts.target.kind == "local"
        or bool(facts.ml_signs)
        or (bool(facts.gpus) and "loads-nothing" not in facts.flags)
    )


@rule("probe-incomplete", "warning", "a fact could not be read; the verdict may miss something")
def probe_incomplete(facts: Facts, need: Requirement | None) -> Hit:
    unread, loading = facts.unreadable, _loading(need)
    if facts.shm.source in ("host", "host-ipc"):
        # the host's own /dev/shm (ipc: host, the fix vLLM's and SGLang's files use): with no need to hold, a size a
        # file cannot tell changes no verdict (ipc-host says where it comes from); with one, what to check on the host
        size = next((u for u in unread if u.startswith(SHM_SIZE_UNKNOWN)), None)
        unread = tuple(u for u in unread if u is not size)
        if size and loading:
            check = (
                f"{loading.subject}'s {format_size(loading.bytes)} (`df -h /dev/shm` on the host says whether it does)"
            )
            unread = (f"{size}: it must hold {check}",) + unread
    if unread:
        return "could not read " + "; ".join(unread), ()
    return None


@rule(
    "bad-label",
    "error",
    "the target's shmdoctor.loader label or annotation is not a loader (judged without it), or its shmdoctor.ignore "
    "label names a rule that does not exist (nothing ignored)",
)
def bad_label(facts: Facts, need: Requirement | None) -> Hit:
    said, fixes = [], []
    if facts.bad_label:
        said.append(f"its shmdoctor.loader label is not a loader, so it was judged without one: {facts.bad_label}")
        fixes.append(Fix(f"correct the label (key=value pairs, e.g. {LOADER_EXAMPLE})"))
    if facts.bad_ignore:
        said.append(f"its shmdoctor.ignore label ignores nothing: {facts.bad_ignore}")
        fixes.append(Fix("correct the label: rule IDs, comma-separated (docs/rules.md lists them)"))
    return ("; ".join(said), tuple(fixes)) if said else None


@rule("no-shm", "error", "there is no /dev/shm: DataLoader workers cannot hand over batches")
def no_shm(facts: Facts, need: Requirement | None) -> Hit:
    loading = _loading(need)
    if not facts.shm.present and (loading or need is None):
        why = " (--ipc=none)" if facts.ipc.mode == "none" else ""
        grow = (
            fixes.grow_shm(loading.bytes, facts, loading.ranks)
            if loading
            else (
                Fix(
                    "run with a private /dev/shm sized for your loader (give shmdoctor the loader for the size)",
                    ipc="private",
                ),
            )
        )
        return f"there is no /dev/shm{why}: DataLoader workers fail with FileNotFoundError", grow + (
            Fix("load in the training process", loader={"num_workers": 0}),
        )
    return None


@rule("shm-read-only", "error", "/dev/shm is mounted read-only: workers cannot create segments")
def shm_read_only(facts: Facts, need: Requirement | None) -> Hit:
    if facts.shm.present and facts.shm.read_only and (need is None or _loading(need)):
        return "/dev/shm is mounted read-only: DataLoader workers fail with 'Read-only file system (30)'", (
            fixes.read_write(facts),
            Fix("load in the training process", loader={"num_workers": 0}),
        )
    return None


@rule("shm-too-small", "error", "the loader needs more /dev/shm than is free")
def shm_too_small(facts: Facts, need: Requirement | None) -> Hit:
    shm, available, need = facts.shm, capacity.shm_free(facts), _loading(need)
    if need and shm.present and available is not None and need.failing_bytes > available:
        if shm.free_bytes is None:  # a file (nothing runs yet), or a container inspected from outside
            unread = "" if facts.target.kind in ("service", "workload") else " (its use was not read)"
            has = f"it has {format_size(available)}{unread}"
        else:
            of = f" of {format_size(shm.size_bytes)}" if shm.size_bytes != shm.free_bytes else ""
            has = f"{format_size(available)}{of} is free"
        msg = f"{need.subject} needs {format_size(need.failing_bytes)} of /dev/shm; {has}: " + consumers_fail(
            need, available
        )
        return msg, fixes.grow_shm(need.bytes, facts, need.ranks) + fixes.consumer_fixes(need, facts) + fixes.fit_today(
            need, facts
        )
    return None


@rule("memory-limit", "error", "the memory limit cannot hold the loader's /dev/shm beside the training process")
def memory_limit(facts: Facts, need: Requirement | None) -> Hit:
    need = _loading(need)
    room = capacity.memory_room(facts, need.ranks) if need else None
    if need and room is not None and need.bytes > room:
        used = facts.memory.used_bytes
        msg = (
            f"the memory limit ({format_size(facts.memory.limit_bytes)}"
            + (f", {format_size(used)} in use" if used is not None else "")
            + f", ~{format_size(capacity.PROCESS_RESERVE * need.ranks)} for the training process) cannot hold "
            f"{need.subject}'s {format_size(need.bytes)} of /dev/shm, whose pages are charged to it: the container's "
            "processes will be OOM-killed: exit 137 with no Python error, or a worker 'killed by signal: Killed'"
        )
        return msg, (fixes.grow_memory(need.bytes, facts, need.ranks),) + fixes.fit_today(need, facts)
    return None


@rule("thin-headroom", "warning", "the loader fits, with little to spare")
def thin_headroom(facts: Facts, need: Requirement | None) -> Hit:
    need = _loading(need)
    cap = capacity.available(facts, need.ranks) if need else None
    if need and cap and capacity.HEADROOM * cap < need.bytes <= cap:
        what = "under the memory limit" if capacity.memory_binds(facts, need.ranks) else "of /dev/shm"
        msg = (
            f"{need.subject} fits with little to spare: it needs {format_size(need.bytes)} of the "
            f"{format_size(cap)} available {what} ({need.bytes / cap:.0%}); a validation loader or a second rank "
            "would not fit"
        )
        if capacity.memory_binds(facts, need.ranks):
            return msg, (fixes.grow_memory(need.bytes, facts, need.ranks),)
        return msg, fixes.grow_shm(need.bytes, facts, need.ranks)[:1]
    return None


@rule("default-shm", "warning", f"the container has the engine's default {DEFAULT_SIZE} /dev/shm, or less")
def default_shm(facts: Facts, need: Requirement | None) -> Hit:
    size = facts.shm.size_bytes
    if (
        need is None
        and not facts.bad_label  # a loader was given, in a label that could not be read: that finding says it
        and facts.shm.source in ("docker-shm", "podman-shm", "runtime-shm")
        and size is not None
        and size <= ENGINE_DEFAULT_SHM  # the default, or set below it (a size in bytes read as MB: 1024 is 1 KiB)
        and not facts.shm.read_only
        and _may_load(facts)
    ):
        engine = {ENGINE_DEFAULT_SHM: "the default", PODMAN_DEFAULT_SHM: "Podman's default"}.get(size)
        said = f"{engine} {format_size(size)}" if engine else f"set to {format_size(size)}, below the default"
        if facts.server is not None:
            return f"/dev/shm is {said} for {server_use(facts.server)}", ()
        # 4 workers, prefetch_factor 2: (2·4 + 1) batches in flight, with the headroom a fix keeps
        most = page_floor(int(size * capacity.HEADROOM) // 9)
        signs = facts.ml_signs + ((f"GPUs {facts.gpus}",) if facts.gpus else ())
        looks = f" for what looks like a training or inference job ({', '.join(signs)})" if signs else ""
        fits = f"batches over {format_size(most)} do not fit" if most else "no batch fits"
        msg = (
            f"/dev/shm is {said}{looks}: with 4 workers (prefetch_factor 2), {fits}. Give shmdoctor your loader "
            "(--batch-size, --num-workers, --sample-bytes) for the size it needs"
        )
        return msg, ()
    return None


def server_use(server: Serving) -> str:
    """What an inference server whose need its file does not tell puts in /dev/shm, and the one thing shmdoctor
    needs to know for the size (workload.served_by computes it where the command says)."""
    if server.name == "triton":
        return (
            "Triton: each python-backend model instance maps a region (1 MiB, growing 1 MiB at a time with the "
            "tensors it passes, kept until its stub exits; other backends take none). Give shmdoctor the "
            "python-backend instances (shmdoctor.loader label triton_instances=N, or --triton-instances) for the size"
        )
    if server.name == "tgi":
        return (
            "TGI: its shards (one a GPU) talk through NCCL, which falls back to /dev/shm where the GPUs are not "
            f"P2P peers ({format_size(consumers.nccl(2, 'shm').bytes)} at 2 shards). Say how many shards (its "
            "--num-shard or NUM_SHARD, a count of GPUs, or a shmdoctor.loader label gpus=N) for the size"
        )
    name = "vLLM" if server.name == "vllm" else "SGLang"
    rings = consumers.vllm(2) if server.name == "vllm" else consumers.sglang(2)
    return (
        f"{name}: its tensor-parallel workers share broadcast rings ({format_size(rings.bytes)} at 2) and NCCL "
        f"beside them, and {server.said} is not a size. Give shmdoctor the tensor parallel size (--serve "
        f"{server.name} --tensor-parallel-size N, or a shmdoctor.loader label serve={server.name},"
        "tensor_parallel_size=N) for the size"
    )


@rule("platform-ignores-shm-size", "warning", "the platform ignores the /dev/shm size the definition asks for")
def platform_ignores_shm_size(facts: Facts, need: Requirement | None) -> Hit:
    if "shm-size-ignored" in facts.flags:
        msg = f"the container gets {format_size(facts.shm.size_bytes)}, not the size it asks for: {facts.shm.detail}"
        move = fixes.FIXED_SHM.get(facts.runtime, "move to a platform that sizes /dev/shm, with")
        return msg, (Fix(f"{move} the size it asks for"),)
    return None


@rule("remove-ipc", "warning", "systemd-logind removes this user's /dev/shm files at logout (RemoveIPC=yes)")
def remove_ipc(facts: Facts, need: Requirement | None) -> Hit:
    if facts.remove_ipc:
        msg = (
            f"systemd-logind removes this user's /dev/shm files and System V segments at the user's last logout "
            f"(RemoveIPC=yes: {facts.remove_ipc}): a job still running then fails with 'could not unlink the "
            "shared memory file' (SLURM steps, nohup'd training)"
        )
        return msg, (
            Fix(
                "keep this user's IPC past logout (root: a logind drop-in, then restart systemd-logind)",
                shell="mkdir -p /etc/systemd/logind.conf.d && printf '[Login]\\nRemoveIPC=no\\n' > "
                "/etc/systemd/logind.conf.d/90-keep-ipc.conf && systemctl restart systemd-logind",
            ),
            Fix(
                "keep this user's manager running between logins (lingering: logind never sees a last logout)",
                shell='loginctl enable-linger "$USER"',
            ),
        )
    return None


@rule("shm-over-memory", "warning", "/dev/shm is larger than the memory limit can hold")
def shm_over_memory(facts: Facts, need: Requirement | None) -> Hit:
    room, size = capacity.memory_room(facts), facts.shm.size_bytes
    by_design = "operator-shm" in facts.flags  # KubeRay's: the memory limit itself, as its operator sizes it
    if _loading(need) is None and _may_load(facts) and not by_design and room is not None and size and size > room:
        msg = (
            f"/dev/shm ({format_size(size)}) can outgrow what the memory limit "
            f"({format_size(facts.memory.limit_bytes)}) leaves beside the processes' own memory "
            f"({format_size(room)}): its pages are charged to that limit, so filling it (a loader's batches, NCCL, "
            "a server's queues) gets the container OOM-killed (exit 137), not a 'No space left' error"
        )
        return msg, ()
    return None


@rule("nofile-low", "warning", "ulimit -n is too low for the shared tensors in flight")
def nofile_low(facts: Facts, need: Requirement | None) -> Hit:
    need = _loading(need)
    if not need or facts.nofile is None:
        return None
    if need.loader is None:
        return None
    descriptors = need.loader.tensors_per_batch * need.batches_in_flight + FD_BASE
    if facts.nofile < descriptors:
        msg = (
            f"ulimit -n is {facts.nofile}; the loader holds a descriptor per shared tensor "
            f"(~{descriptors} with the process's own): expect 'received 0 items of ancdata' or 'Too many open files'"
        )
        return msg, (
            Fix("raise the descriptor limit", nofile=descriptors * 4),
            Fix("in the training script: torch.multiprocessing.set_sharing_strategy('file_system')"),
        )
    return None


@rule("oom-killed", "error", "the container was OOM-killed")
def oom_killed(facts: Facts, need: Requirement | None) -> Hit:
    if "oom-killed" in facts.flags:
        loading = _loading(need)
        grow = (fixes.grow_memory(loading.bytes, facts, loading.ranks),) if loading else ()
        return (
            "the container was OOM-killed (State.OOMKilled, exit 137): /dev/shm pages count against its memory limit",
            grow,
        )
    return None


@rule("ipc-host", "info", "the container shares the host's IPC namespace")
def ipc_host(facts: Facts, need: Requirement | None) -> Hit:
    if facts.ipc.mode == "host" and (facts.runtime != "none" or facts.target.kind != "local"):
        return "the container shares the host's IPC namespace and /dev/shm (--ipc=host / hostIPC)", (
            Fix("prefer a sized private /dev/shm on shared hosts", caveat=fixes.IPC_HOST_CAVEAT),
        )
    return None


@rule(
    "swarm-ignores-shm-size", "warning", f"Swarm (docker stack) ignores shm_size and ipc: /dev/shm stays {DEFAULT_SIZE}"
)
def swarm_ignores_shm_size(facts: Facts, need: Requirement | None) -> Hit:
    swarm = facts.swarm
    if swarm is None or facts.shm.source != "docker-shm" or not swarm.ignores:
        return None
    ignored: tuple[str, ...] = (f"ipc: {swarm.ignored_ipc}",) if swarm.ignored_ipc is not None else ()
    if swarm.ignored_shm_size is not None:
        ignored += (f"shm_size: {format_size(swarm.ignored_shm_size)}",)
    written = " and ".join(ignored)
    msg = (
        f"this file is meant for Swarm: docker stack deploy ignores {written} (moby#26714), so "
        f"the service gets the engine's default {format_size(facts.shm.size_bytes)} /dev/shm"
    )
    loading = _loading(need)
    size = capacity.shm_size_for(loading.bytes, facts) if loading else swarm.ignored_shm_size
    if size:
        return msg, (Fix(f"mount a {format_size(size)} tmpfs at /dev/shm instead", shm_bytes=size),)
    return msg, (Fix("bind the host's /dev/shm instead", ipc="host", caveat=fixes.HOST_SHM_CAVEAT),)


@rule("shm-on-disk", "warning", "/dev/shm is a disk-backed emptyDir, not memory")
def shm_on_disk(facts: Facts, need: Requirement | None) -> Hit:
    if facts.shm.source != "k8s-emptydir-disk":
        return None
    msg = (
        "/dev/shm is a disk-backed emptyDir (no medium: Memory): shared batches go through the node's disk and "
        "count as ephemeral storage (the pod is evicted past sizeLimit)"
    )
    loading = _loading(need)
    size = capacity.shm_size_for(loading.bytes, facts) if loading else facts.shm.size_bytes
    if size:
        return msg, (Fix(f"make it memory-backed, {format_size(size)}", shm_bytes=size),)
    return msg, (Fix("make it memory-backed: emptyDir: {medium: Memory}, with a sizeLimit for your loader"),)


@rule("shm-full", "warning", "/dev/shm is (nearly) full before the loader starts")
def shm_full(facts: Facts, need: Requirement | None) -> Hit:
    shm = facts.shm
    if shm.present and shm.size_bytes and shm.free_bytes is not None and shm.free_bytes * 20 < shm.size_bytes:
        msg = (
            f"/dev/shm is {'full' if shm.free_bytes == 0 else 'nearly full'}: {format_size(shm.used_bytes)} of "
            f"{format_size(shm.size_bytes)} in use; segments of killed loaders stay until removed"
        )
        return msg, (Fix("see what no process holds with `shmdoctor clean`, free it with `shmdoctor clean --yes`"),)
    return None


def consumers_fail(need: Requirement, free: int) -> str:
    """How each consumer that takes /dev/shm fails when it runs out, in its own words."""
    said = []
    for n in need.breakdown:
        if not n.bytes or not n.fails:
            continue
        if n.term == "dataloader":
            said.append("workers will fail with 'unable to allocate shared memory' or a bus error")
        elif n.term == "nccl":
            said.append("NCCL fails with 'unhandled system error' ('failed to extend /dev/shm/nccl-…')")
        elif n.term == "vllm":
            first = vllm_refused(need, free)
            said.append(f"vLLM refuses to start ('Insufficient space in /dev/shm for {first}')" if first else "")
        elif n.term == "ray":
            said.append("Ray refuses to start: its object store exceeds /dev/shm and is over 10 GB")
        else:
            said.append(f"{n.term} fails to create its shared memory")
    return "; ".join(s for s in said if s) or "its consumers will fail to create their segments"


def vllm_refused(need: Requirement, free: int) -> str | None:
    """vLLM's own words for the first buffer it refuses, the loader's in-flight batches taken first (consumers_fail
    asks where the need has vLLM's rings)."""
    others = sum(n.bytes for n in need.breakdown if n.term not in ("vllm", "ray"))
    refused = consumers.vllm_refused(need.tensor_parallel, max(0, free - others))
    if refused is None:
        return None
    name, size, left = refused
    return f"{name}: {size / MiB:.2f} MiB required, {left / MiB:.2f} MiB free"


@rule("nccl-shm-fallback", "warning", "NCCL was assumed to use P2P; its /dev/shm fallback would not fit")
def nccl_shm_fallback(facts: Facts, need: Requirement | None) -> Hit:
    available = capacity.shm_free(facts)
    if need is None or not need.nccl_fallback or available is None:
        return None
    worst = need.failing_bytes + need.nccl_fallback
    if worst <= available:
        return None
    msg = (
        f"NCCL was taken to use P2P between the GPUs (NVLink, PCIe peers); where it cannot (consumer GPUs, across "
        f"sockets, NCCL_P2P_DISABLE) it falls back to /dev/shm and needs {format_size(need.nccl_fallback)} more, "
        f"{format_size(worst)} in all, of the {format_size(available)} there is: 'unhandled system error'. Say "
        "--nccl shm or --nccl p2p when you know"
    )
    return msg, fixes.grow_shm(worst, facts, need.ranks)[:1] + fixes.nccl_fixes(facts)


@rule("ray-object-store-fallback", "warning", "Ray's object store will not fit /dev/shm: it falls back to /tmp, slowly")
def ray_object_store_fallback(facts: Facts, need: Requirement | None) -> Hit:
    ray, available = (need.term("ray") if need else None), capacity.shm_free(facts)
    if need is None or ray is None or not ray.bytes or ray.fails or available is None:
        return None
    room = available - need.failing_bytes
    if room > ray.bytes:  # Ray keeps /dev/shm only with more free than the store (services.py: shm_avail > store)
        return None
    msg = (
        f"Ray's object store ({format_size(ray.bytes)}) does not fit the {format_size(max(room, 0))} of /dev/shm "
        "left: Ray puts it in /tmp instead ('The object store is using /tmp instead of /dev/shm'), and every "
        "object put or got goes through the disk"
    )
    cap = page_floor(int(room * capacity.HEADROOM))  # below 0 where the rest takes it all: no cap offered
    smaller = (
        (Fix(f"cap Ray's object store at what fits: ray.init(object_store_memory={cap})"),)
        if cap >= consumers.RAY_MIN_STORE  # Ray refuses a store below its minimum
        else ()
    )
    return msg, fixes.grow_shm(need.bytes, facts, need.ranks)[:1] + smaller


def judge(facts: Facts, need: Requirement | None, *, fail_on: Severity = "error") -> Report:
    findings = []
    for r in RULES:
        if r.on != "facts":
            continue
        hit = r.check(facts, need)
        if hit:
            message, fixes_ = hit
            findings.append(Finding(r.id, r.severity, message, tuple(fixes_)))
    findings.sort(key=lambda f: -SEVERITY_RANK[f.severity])
    return Report(facts=facts, requirement=need, findings=tuple(findings), fail_on=fail_on)


def catalogue() -> list[Rule]:
    """Every rule: the facts' and bench's (rules_bench registers its own when imported; check does not pay for it)."""
    from . import rules_bench  # noqa: F401

    return RULES
