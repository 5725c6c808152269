"""A workload as a user gives it, its DataLoader and the other consumers of /dev/shm beside it (NCCL between the
GPUs of one host, a vLLM or SGLang server, Ray's object store, Triton's python backend), and the requirement they
add up to for one target's facts (the GPUs it sees, its NCCL_* variables, its memory)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from fnmatch import fnmatchcase
from typing import Literal, Union

from . import capacity, consumers
from .errors import UsageError
from .limits import MAX_DIGITS, bounded, shown
from .loader import LOADER_LABEL, LoaderSpec
from .model import Facts, Need, Requirement, Value
from .probe.workload import gpu_count
from .sizes import parse_size

MAX_GPUS = 1024  # local ranks of one host, past any machine built
MAX_COUNT = 1_000_000  # nodes, model instances
_MOST = {"gpus": MAX_GPUS, "tensor_parallel_size": MAX_GPUS, "nodes": MAX_COUNT, "triton_instances": MAX_COUNT}
RayStore = Union[int, Literal["auto"]]
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _digits(value: str) -> bool:
    """ASCII digits, as many as a number has ('²' is a digit to str.isdigit, not to int; 5000 digits are refused)."""
    return value.isascii() and value.isdigit() and len(value) <= MAX_DIGITS


@dataclass(frozen=True, eq=False, repr=False)
class Consumers(Value):
    """The consumers beside the DataLoader, as given; None where not given (detected from the facts, or absent)."""

    gpus: int | None = None  # local ranks that talk through NCCL
    nccl: consumers.NcclMode | None = None
    all_to_all: bool | None = None
    nodes: int | None = None
    serve: consumers.Server | None = None
    tensor_parallel_size: int | None = None
    ray_object_store: RayStore | None = None
    triton_instances: int | None = None

    def __post_init__(self) -> None:
        for name, most in _MOST.items():
            if getattr(self, name) is not None:
                bounded(name, getattr(self, name), 1, most)
        if self.tensor_parallel_size is not None and self.serve is None:
            raise UsageError("--tensor-parallel-size needs --serve vllm or --serve sglang")

    @classmethod
    def parse(cls, pairs: dict[str, str], text: str) -> Consumers:
        """Label values, already split: gpus=8,nccl=shm,all_to_all=true,serve=vllm,tensor_parallel_size=8,..."""
        out: dict[str, object] = {}
        for key, value in pairs.items():
            low = value.lower()
            if key == "nccl" and low in ("auto", "shm", "p2p", "off") or key == "serve" and low in ("vllm", "sglang"):
                out[key] = low
            elif key == "all_to_all" and low in _TRUE + _FALSE:
                out[key] = low in _TRUE
            elif key == "ray_object_store":
                out[key] = "auto" if low == "auto" else parse_size(value, what="ray_object_store")
            elif key in ("gpus", "nodes", "tensor_parallel_size", "triton_instances") and _digits(value):
                out[key] = int(value)
            else:
                raise UsageError(f"workload spec {shown(text)}: {key}={shown(value)} is not a value it takes")
        return cls(**out)  # type: ignore[arg-type]

    @property
    def given(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


CONSUMER_KEYS = frozenset(f.name for f in fields(Consumers))


@dataclass(frozen=True, eq=False, repr=False)
class Workload(Value):
    """What a target runs that takes /dev/shm: a loader and the other consumers."""

    loader: LoaderSpec = LoaderSpec()
    consumers: Consumers = Consumers()

    @classmethod
    def parse(cls, text: str) -> Workload:
        """A shmdoctor.loader label or annotation: the loader's keys and the consumers' in one list."""
        loader_parts, pairs = [], {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            key = key.strip().replace("-", "_")
            if sep and key in CONSUMER_KEYS:
                pairs[key] = value.strip()
            else:
                loader_parts.append(part)
        return cls(LoaderSpec.parse(",".join(loader_parts)), Consumers.parse(pairs, text))

    @property
    def given(self) -> bool:
        return self.loader.given or self.consumers.given

    def override(self, other: Workload) -> Workload:
        """This workload with other's given fields over it (a target's label over the command line)."""
        given = {f.name: v for f in fields(other.consumers) if (v := getattr(other.consumers, f.name)) is not None}
        return Workload(self.loader.override(other.loader), replace(self.consumers, **given))

    def validate(self) -> None:
        """Refuse a bad command line before any target is probed: UsageError, one line."""
        if self.loader.given:
            self.loader.config()

    def requirement(self, facts: Facts | None = None) -> Requirement | None:
        """What the workload needs of this target's /dev/shm; None when nothing was given."""
        if not self.given:
            return None
        base = self.loader.requirement() if self.loader.given else None
        needs: list[Need] = list(base.breakdown) if base else []
        c = self.consumers
        env = dict(facts.nccl_env) if facts else {}
        detected = facts and (facts.gpu_count or gpu_count(facts.gpus))
        gpus = c.gpus or detected or 1
        tp = c.tensor_parallel_size or (gpus if c.serve else 1)
        ranks = max(base.ranks if base else 1, gpus if (c.gpus or c.serve) else 1, tp)
        fallback = shm = 0
        if gpus > 1 or (c.nodes or 1) > 1 or c.nccl is not None:
            needs_nccl, fallback, shm = _nccl(c, gpus, env)
            needs.append(needs_nccl)
        if c.serve == "vllm":
            needs.append(consumers.vllm(tp))
        elif c.serve == "sglang":
            needs.append(consumers.sglang(tp))
        if c.ray_object_store is not None:
            needs.append(_ray(c.ray_object_store, facts))
        if c.triton_instances:
            needs.append(consumers.triton(c.triton_instances))
        alone = [n.term for n in needs] == ["dataloader"]
        formula = needs[0].formula if alone else " + ".join(n.term for n in needs if n.bytes)
        return Requirement(
            bytes=sum(n.bytes for n in needs),
            loader=base.loader if base else None,
            batches_in_flight=base.batches_in_flight if base else 0,
            breakdown=tuple(needs),
            formula=formula or "0",
            ranks=ranks,
            nccl_fallback=fallback,
            nccl_shm=shm,
            tensor_parallel=tp,
        )


NOT_LIKELY = (
    "loader options not applied: it does not look like it uses /dev/shm (no ML image or command, no GPUs, no "
    "inference server); --workload NAME applies them"
)
NOT_NAMED = "loader options not applied: not named by --workload"


def uses_shm(facts: Facts) -> bool:
    """It looks like a training or inference job (the signs a default /dev/shm is warned on): an ML image or
    command, GPUs it loads with, an inference server."""
    gpus = bool(facts.gpus) and "loads-nothing" not in facts.flags
    return bool(facts.ml_signs) or facts.server is not None or gpus


def _names(facts: Facts) -> set[str]:
    """What --workload NAME may say of a target: its whole name, its name in its file (a service, `Kind/name`, a
    line), each part of that and each leading run of parts (`Job/trainer`), its container id."""
    name = facts.target.name
    own = name[len(facts.target.file) + 1 :] if facts.target.file and name.startswith(facts.target.file + ":") else name
    parts = own.split("/")
    out = {name, own, *parts, *("/".join(parts[:i]) for i in range(1, len(parts)))}
    return out | ({facts.target.id} if facts.target.id else set())


def selection(targets: list[Facts], names: tuple[str, ...]) -> list[str]:
    """Which targets the command line's loader and consumers apply to, each "" (applied) or why not: those named by
    --workload when given (a shell pattern: `*` is all); else those that look like they use /dev/shm; all when none
    does."""
    if names:
        named = [any(fnmatchcase(n, pattern) for n in _names(f) for pattern in names) for f in targets]
        return ["" if match else NOT_NAMED for match in named]
    likely = [uses_shm(f) for f in targets]
    return ["" if used or not any(likely) else NOT_LIKELY for used in likely]


def labelled_requirement(base: Workload, label: str | None, facts: Facts) -> tuple[Requirement | None, tuple[str, ...]]:
    """The command line's workload, overridden by a target's own shmdoctor.loader label or annotation, and a note
    that says so. A bad label raises UsageError: each command decides what that means for its target."""
    own = Workload.parse(label) if label else Workload()
    what = "workload" if own.consumers.given else "loader"
    notes: tuple[str, ...] = (f"{what} from its {LOADER_LABEL} label: {label}",) if label else ()
    served = None if base.consumers.given or own.consumers.given else served_by(facts)
    if served:
        base, notes = Workload(base.loader, served[0]), notes + (served[1],)
    return base.override(own).requirement(facts), notes


def served_by(facts: Facts) -> tuple[Consumers, str] | None:
    """The consumers an inference server's command implies (its tensor-parallel ranks talk through NCCL, vLLM's and
    SGLang's broadcast rings), and a note that says what they were inferred from; None where it does not say."""
    server = facts.server
    if server is None or server.name == "triton":  # Triton's regions are its model instances': the file does not say
        return None
    ranks = server.tensor_parallel or (facts.gpu_count or gpu_count(facts.gpus) if server.name == "tgi" else None)
    if not ranks or ranks > MAX_GPUS:  # past any machine: a file's typo, judged as if it did not say
        return None
    said = server.said or "TGI's default: a shard a GPU it is given"
    note = f"workload inferred from its command: {server.name}, tensor parallel {ranks} ({said})"
    if server.name == "tgi":
        return Consumers(gpus=ranks), note
    return Consumers(gpus=ranks, serve=server.name, tensor_parallel_size=ranks), note


def _env_int(env: dict[str, str], name: str) -> int | None:
    try:
        return int(env[name], 0) if name in env else None
    except ValueError:
        return None


def nccl_buffsize(env: dict[str, str]) -> int:
    """The SIMPLE buffer NCCL allocates: NCCL_BUFFSIZE as NCCL reads it (any base), its default where it cannot."""
    return _env_int(env, "NCCL_BUFFSIZE") or consumers.NCCL_DEFAULT_BUFFSIZE


def _nccl(c: Consumers, gpus: int, env: dict[str, str]) -> tuple[Need, int, int]:
    """NCCL's term, what it would add over /dev/shm if the P2P it was assumed to use is not there, and what its SHM
    connections take (what NCCL_SHM_DISABLE frees: the proxy pools stay)."""
    transport, why = consumers.nccl_transport(c.nccl or "auto", env)
    buffsize = nccl_buffsize(env)
    channels = min(consumers.NCCL_CHANNELS, _env_int(env, "NCCL_MAX_NCHANNELS") or consumers.NCCL_CHANNELS)
    settings = dict(buffsize=buffsize, channels=channels, all_to_all=bool(c.all_to_all), nodes=c.nodes or 1)
    need = consumers.nccl(gpus, transport, **settings)  # type: ignore[arg-type]
    fallback = shm = 0
    if transport == "p2p" and c.nccl is None:
        fallback = consumers.nccl(gpus, "shm", **settings).bytes - need.bytes  # type: ignore[arg-type]
    if transport == "shm":
        shm = need.bytes - consumers.nccl(gpus, "off", **settings).bytes  # type: ignore[arg-type]
    return Need("nccl", need.bytes, f"{need.formula}; {why}"), fallback, shm


def _ray(store: RayStore, facts: Facts | None) -> Need:
    if store != "auto":
        return consumers.ray(store, given=True)
    total = facts and (facts.memory.limit_bytes or facts.memory.machine_bytes)
    if not total or facts is None:
        return Need("ray", 0, "object store unknown without the memory it sees: give --ray-object-store SIZE")
    available = max(0, total - (facts.memory.used_bytes or 0))
    return consumers.ray(consumers.ray_default_store(available, capacity.shm_free(facts)), given=False)
