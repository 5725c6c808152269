"""The currency between stages: frozen dataclasses, the same whatever the target or the source of its facts."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Callable, ClassVar, Literal

from .exits import ExitCode
from .sizes import KiB, MiB, format_size

SCHEMA = "shmdoctor/1"  # bench's document only, until it moves to shmdoctor/bench/1 (render.RESERVED)
SHM = "/dev/shm"
# The /dev/shm an engine gives a container nobody sized: Docker's --shm-size default, and what containerd and
# CRI-O give a pod's containers.
ENGINE_DEFAULT_SHM = 64 * MiB
PODMAN_DEFAULT_SHM = 64000 * KiB  # Podman's own default: size=64000k, 62.5 MiB (FACTS.md, Podman 4.3)
SHM_SIZE_UNKNOWN = f"the size of {SHM}"  # how a probe starts the 'unreadable' entry for a size it cannot know

Severity = Literal["error", "warning", "info"]
# Where a /dev/shm comes from. Every probe says one of these; the text renderer describes each (a test proves it).
ShmSource = Literal[
    "docker-shm",  # the engine's own shm mount, sized by --shm-size / shm_size
    "podman-shm",  # Podman's own shm mount, sized by --shm-size (64000k by default)
    "runtime-shm",  # containerd's or CRI-O's in a pod without a volume at /dev/shm
    "tmpfs",  # a tmpfs mounted over /dev/shm (--tmpfs, --mount type=tmpfs, compose tmpfs:)
    "host",  # the host's /dev/shm bound in (-v /dev/shm:/dev/shm, hostPath)
    "host-ipc",  # the host's, through its IPC namespace (--ipc=host, hostIPC)
    "k8s-emptydir",  # a memory-backed emptyDir
    "k8s-emptydir-disk",  # an emptyDir on the node's disk
    "system",  # not in a container: the machine's own
    "none",  # there is none (--ipc=none)
    "unknown",
]
IpcMode = Literal["host", "private", "shareable", "container", "none", "unknown"]
# ecs: an ECS task definition; batch: an AWS Batch job definition; azureml: an Azure ML job; sagemaker: inside a
# SageMaker job
Runtime = Literal[
    "docker", "podman", "kubernetes", "container", "compose", "ecs", "batch", "azureml", "sagemaker", "none"
]
# Remarks of one source the rules and fixes read: the container was OOM-killed (inspect's State.OOMKilled); a
# compose service sets its memory limit under deploy.resources (fixes go there).
# shm-fixed: the platform gives a /dev/shm nobody can size (Fargate, SageMaker): no fix may ask for another size;
# shm-size-ignored: the definition asks for a size that platform ignores (Fargate's sharedMemorySize).
# operator-shm: the operator creating the pod sized /dev/shm from the container's memory by design (KubeRay): as
# large as the limit, not a size the file asked for; without a loader it is not warned as over the memory limit.
# loads-nothing: its command launches ranks elsewhere, fetches and exits, or shows logs, whatever GPUs it reserves
Flag = Literal["oom-killed", "compose-deploy-memory", "shm-fixed", "shm-size-ignored", "operator-shm", "loads-nothing"]
Verdict = Literal["ok", "warn", "fail"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class Value:
    """The equality, hash and repr of the frozen dataclasses check builds, as dataclasses generates them (the fields
    in order, as a tuple; never equal to another class's), written once: `@dataclass(frozen=True, eq=False,
    repr=False)` generates only __init__ and the frozen __setattr__ and __delattr__ of each. Each method generated is
    compiled as the module is imported: a tenth of a millisecond, 4.4 ms of check's start for its 17 classes
    (docs/speed.md §3)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value) or other.__class__ is not self.__class__:
            return NotImplemented
        return _values(self) == _values(other)

    def __hash__(self) -> int:
        return hash(_values(self))

    def __repr__(self) -> str:
        args = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))  # type: ignore[arg-type]
        return f"{type(self).__qualname__}({args})"


_GETTERS: dict[type, Callable[[Any], tuple[object, ...]]] = {}


def _values(value: Value) -> tuple[object, ...]:
    """The fields' values in order, by a getter made once for each class (an audit compares its containers' facts:
    4 µs for two equal Facts, against 1.7 generated and 18 with dataclasses.fields() at each call)."""
    cls = value.__class__
    if cls not in _GETTERS:
        names = [f.name for f in fields(value)]  # type: ignore[arg-type]
        _GETTERS[cls] = attrgetter(*names) if len(names) > 1 else lambda v: tuple(getattr(v, n) for n in names)
    return _GETTERS[cls](value)


@dataclass(frozen=True, eq=False, repr=False)
class Place(Value):
    """A place in a file that lint read: another file of a compose set that defines part of a target, or where
    --fix writes its fix."""

    file: str
    line: int | None
    why: str  # what is there, in words
    name: str = ""  # the service's name there (a compose set: --fix writes into that service)


@dataclass(frozen=True, eq=False, repr=False)
class Target(Value):
    """What is judged: this machine, a container, a compose service or a Kubernetes workload."""

    kind: Literal["local", "container", "service", "workload"]
    name: str
    id: str | None = None
    file: str | None = None  # lint: the file that set the judged value, as given or found ("<stdin>" for stdin)
    line: int | None = None  # and its line, else the line its definition starts on (None: JSON keeps no lines)
    related: tuple[Place, ...] = ()  # lint: the other files and lines of a compose set that define it
    fix_at: Place | None = None  # lint --fix on a compose set: the file and service the fix is written into


@dataclass(frozen=True, eq=False, repr=False)
class Shm(Value):
    """The target's /dev/shm: where it comes from, its size and use (None: not known)."""

    present: bool
    size_bytes: int | None
    used_bytes: int | None
    free_bytes: int | None
    source: ShmSource
    detail: str = ""  # how the source was told, in words (a mountinfo line, an inspect key)
    read_only: bool = False  # mounted read-only: no segment can be created, whatever its size

    @classmethod
    def unmeasured(cls, size: int | None, source: ShmSource, detail: str, read_only: bool = False) -> Shm:
        """A /dev/shm known from its definition (inspect, a file): what is used, and so free, is not known."""
        return cls(
            present=True,
            size_bytes=size,
            used_bytes=None,
            free_bytes=None,
            source=source,
            detail=detail,
            read_only=read_only,
        )


@dataclass(frozen=True, eq=False, repr=False)
class Ipc(Value):
    """The target's IPC namespace mode, and the container that owns it for container:NAME."""

    mode: IpcMode
    owner: str | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Memory(Value):
    """The target's memory limit and use."""

    limit_bytes: int | None  # None: no limit below the machine's
    used_bytes: int | None
    machine_bytes: int | None = None  # the machine's memory, where the probe runs on it


@dataclass(frozen=True, eq=False, repr=False)
class Swarm(Value):
    """A compose service meant for Swarm (docker stack deploy), which ignores shm_size and ipc (moby#26714): what the
    file asks of them, that Swarm will not do."""

    ignored_shm_size: int | None = None  # the file's shm_size, in bytes
    ignored_ipc: str | None = None  # the file's ipc, as written

    @property
    def ignores(self) -> bool:
        return self.ignored_shm_size is not None or self.ignored_ipc is not None


ServerName = Literal["vllm", "sglang", "tgi", "triton"]


@dataclass(frozen=True, eq=False, repr=False)
class Serving(Value):
    """An inference server a definition's image or command names, and the GPUs it splits the model over, as read."""

    name: ServerName
    tensor_parallel: int | None  # None: the command does not say (a variable, or TGI's default: the GPUs it sees)
    said: str  # where the size comes from: the flag as written, or the server's default


@dataclass(frozen=True, eq=False, repr=False)
class Facts(Value):
    """Everything a probe found about one target: what every rule reads."""

    target: Target
    shm: Shm
    ipc: Ipc
    memory: Memory
    runtime: Runtime = "none"
    nofile: int | None = None  # soft RLIMIT_NOFILE
    cpus: float | None = None
    gpus: str | None = None  # GPUs requested (docker --gpus): "all", a count or device ids
    # Facts that could not be read, in words: each becomes a 'probe-incomplete' finding, never a crash.
    unreadable: tuple[str, ...] = ()
    flags: frozenset[Flag] = frozenset()
    swarm: Swarm | None = None  # a compose service meant for docker stack deploy
    # Why it looks like a training or inference job (an ML image, a torch / ray / vllm command), in words: without
    # a loader, lint and audit warn about a default /dev/shm only where it does or GPUs are asked for.
    ml_signs: tuple[str, ...] = ()
    # On a bare host: where systemd-logind's RemoveIPC=yes comes from, when it applies to this user.
    remove_ipc: str | None = None
    gpu_count: int | None = None  # GPUs this target's processes see (local ranks NCCL connects), where known
    # NCCL_* variables of the target's environment (names and values, never printed: rules say names only).
    nccl_env: tuple[tuple[str, str], ...] = ()
    # The target's own shmdoctor.loader label or annotation, when it is not a loader: why (a 'bad-label' finding).
    bad_label: str | None = None
    # Its shmdoctor.ignore label, when it names no known rule (audit, exporter): why (a 'bad-label' finding).
    bad_ignore: str | None = None
    # Where a /dev/shm fix goes in the terms of the operator that creates this pod (KubeRay sizes it from memory):
    # said before the fix in the pod's form.
    operator_fix: str | None = None
    server: Serving | None = None  # an inference server its command or image names (lint, audit)
    # Where its fix is written, where the probe knows better than the runtime: a devcontainer's runArgs, a CI job's
    # container options, a Jenkins agent's args, a Terraform resource's HCL (render/forms.py's form_of otherwise)
    form: Form | None = None


@dataclass(frozen=True, eq=False, repr=False)
class LoaderConfig(Value):
    """A DataLoader's settings, with the batch they load."""

    batch_size: int
    num_workers: int
    prefetch_factor: int  # the effective value: 2 by default with workers, 0 without
    pin_memory: bool
    batch_bytes: int  # one collated batch, each tensor page-rounded, summed
    tensors_per_batch: int = 1
    ranks: int = 1
    sample_bytes: int | None = None  # as given or measured; None when only batch_bytes is known


Consumer = Literal["dataloader", "nccl", "vllm", "sglang", "ray", "triton"]


@dataclass(frozen=True, eq=False, repr=False)
class Need(Value):
    """One consumer's share of the requirement, with the arithmetic that gives it."""

    term: Consumer
    bytes: int
    formula: str
    fails: bool = True  # running short fails the job; False: it only slows it (Ray's store falls back to /tmp)


@dataclass(frozen=True, eq=False, repr=False)
class Requirement(Value):
    """What a workload needs of /dev/shm: the sum of its consumers' needs (the DataLoader's first)."""

    bytes: int
    loader: LoaderConfig | None  # None: no DataLoader, other consumers only
    batches_in_flight: int  # the loader's, per rank
    breakdown: tuple[Need, ...]
    formula: str
    ranks: int = 1  # training or serving processes on this host, each with memory of its own beside /dev/shm
    # What NCCL would add if the P2P it was assumed to use is not there (--nccl auto): it falls back to /dev/shm.
    nccl_fallback: int = 0
    nccl_shm: int = 0  # what NCCL's SHM connections take of it: what NCCL_SHM_DISABLE or smaller buffers would shrink
    tensor_parallel: int = 1  # an inference server's, where one is given

    @property
    def failing_bytes(self) -> int:
        """The part whose shortage fails the job (Ray's store below 10 GB falls back to /tmp, slower, instead)."""
        return sum(n.bytes for n in self.breakdown if n.fails)

    @property
    def subject(self) -> str:
        """What the report calls it: the loader, or the job when it has other consumers (even ones that take no
        /dev/shm here, as NCCL over P2P)."""
        return "this loader" if [n.term for n in self.breakdown] in ([], ["dataloader"]) else "this job"

    def term(self, name: Consumer) -> Need | None:
        return next((n for n in self.breakdown if n.term == name), None)


# The forms a fix is said in: where the target is defined, in that place's own language (render/forms.py has one
# renderer for each, a test proves the map total). shell: the machine itself; swarm: a compose file for docker stack.
Form = Literal[
    "shell",
    "docker",
    "podman",
    "compose",
    "swarm",
    "kubernetes",
    "quadlet",
    "ecs",
    "batch",
    "azureml",
    "devcontainer",
    "github-actions",
    "gitlab-runner",
    "jenkins",
    "terraform",
    "cloudformation",
    "nomad",
    "kfp",
    "vertex",
]


@dataclass(frozen=True, eq=False, repr=False)
class Fix(Value):
    """A remedy, said by what it sets, whatever the target: render/forms.py says it in each target's own language,
    and lint --fix writes the same values into the file."""

    summary: str
    shm_bytes: int | None = None  # a /dev/shm of this size, where the target's /dev/shm comes from
    memory_bytes: int | None = None  # a memory limit of this size
    ipc: Literal["private", "host"] | None = None  # the IPC namespace to run in
    env: tuple[tuple[str, str], ...] = ()  # variables for the job's processes
    nofile: int | None = None  # the descriptor limit (soft and hard)
    loader: dict[str, int] | None = None  # loader settings that fit today
    shell: str | None = None  # a command for the machine itself (not in a container)
    caveat: str | None = None

    @property
    def sets(self) -> bool:
        """It changes the target's definition (a size, a limit, the IPC namespace, a variable)."""
        return bool(self.shm_bytes or self.memory_bytes or self.ipc or self.env or self.nofile)


@dataclass(frozen=True, eq=False, repr=False)
class Suppression(Value):
    """Why a finding does not count: by whom, in words ("# shmdoctor: ignore=... at FILE:LINE", "its
    shmdoctor.ignore label", "--ignore", "not in --select"), and SARIF's kind: inSource (the definition's own
    comment, label or annotation) or external (the command line, a config file)."""

    by: str
    kind: Literal["inSource", "external"]


@dataclass(frozen=True, eq=False, repr=False)
class Finding(Value):
    """A rule's verdict on one target, with its fixes; a suppressed one stays, marked, and counts for nothing."""

    id: str
    severity: Severity
    message: str
    fixes: tuple[Fix, ...] = ()
    suppressed: Suppression | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Report(Value):
    """One target judged: check's document, and each target of audit's and lint's."""

    kind: ClassVar[str] = "check"
    facts: Facts
    requirement: Requirement | None
    findings: tuple[Finding, ...]
    fail_on: Severity = "error"
    notes: tuple[str, ...] = field(default=())

    @property
    def active(self) -> tuple[Finding, ...]:
        """The findings that count: all but the suppressed (which the documents still list, marked)."""
        return tuple(f for f in self.findings if f.suppressed is None)

    @property
    def verdict(self) -> Verdict:
        worst = max((SEVERITY_RANK[f.severity] for f in self.active), default=-1)  # none: below even info
        if worst >= SEVERITY_RANK[self.fail_on]:
            return "fail"
        return "warn" if worst >= SEVERITY_RANK["warning"] else "ok"

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode.FINDING if self.verdict == "fail" else ExitCode.OK

    def headline(self) -> str:
        """The finding that decides the verdict, or what was found fine."""
        top = next((f for f in self.active if f.severity != "info"), None)
        if top:
            return top.message
        shm = self.facts.shm
        size = format_size(shm.size_bytes) if shm.size_bytes is not None else "of unknown size"
        if self.requirement is None:
            return f"/dev/shm is {size}; give a loader (--batch-size, --num-workers, --sample-bytes) to judge it"
        need, free = self.requirement, shm.free_bytes
        has = f"{format_size(free)} is free" if free is not None else f"it has {size}"  # as the failure says it
        return f"{need.subject} needs {format_size(need.bytes)} of /dev/shm; {has}: it fits"


def worst_verdict(verdicts: list[str]) -> Verdict:
    order = ["ok", "warn", "fail"]
    return order[max((order.index(v) for v in verdicts), default=0)]  # type: ignore[return-value]
