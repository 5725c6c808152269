"""A whole bench, as the command asks for it: the device, the batch measured, the configs, the memory check, the
sweep with its progress, then the recommendation, the findings and the document. The command parses and renders.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass, field, replace

from ..errors import ProbeError, UsageError
from ..exits import ExitCode
from .document import BenchDocument, document
from .model import Result
from .plan import Plan, with_persistence
from .prctl import reaping_orphans
from .stop import Stopped, pending
from .zygote import Zygote

# torch from the package index is built for CUDA and pulls its libraries (gigabytes); PyTorch's own index has the CPU
# build (docs/install.md)
TORCH_CPU = "on a machine without a GPU, the CPU build first: pip install torch --index-url " + (
    "https://download.pytorch.org/whl/cpu"
)

Progress = Callable[[int, bool], AbstractContextManager[Callable[[Result], None]]]


@dataclass(frozen=True)
class Request:
    batch_size: int
    workers: tuple[int, ...]
    prefetch: tuple[int, ...]
    pin_memory: tuple[bool, ...] | None  # None: the device's default (CUDA: true,false; CPU: false)
    non_blocking: tuple[bool, ...] | None
    sample_bytes: int | None = None
    dataset: str | None = None
    item_latency: float = 0.0
    step_time: float = 0.0
    batches: int | None = None
    budget: float = 60.0
    device: str = "auto"
    persistent_workers: tuple[bool, ...] | None = None  # None: false, and the next epoch is not timed
    pin_memory_device: tuple[str | None, ...] = (None,)  # None: not passed; CUDA only, with pin_memory true
    search: bool = False  # the workers were given as a range: searched around the knee, not walked
    exhaustive: bool = False
    run_failing: bool = False


@dataclass
class Timeline:
    """Seconds from the bench process's start to each step: where the fixed cost of a bench goes (the JSON's
    timeline). A step marked at a time.time() another process read (the zygote's) is marked at that time."""

    start: float  # time.time() of the process's start
    steps: dict[str, float] = field(default_factory=dict)

    def mark(self, step: str, at: float | None = None) -> None:
        self.steps[step] = round((time.time() if at is None else at) - self.start, 3)


def process_age() -> float:
    """Seconds since this process started: its start and the uptime, both counted from boot (psutil's create_time
    adds a boot time rounded to the second)."""
    with open("/proc/self/stat") as f:
        start = int(f.read().rpartition(")")[2].split()[19])  # field 22, starttime, in clock ticks
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Outcome:
    document: BenchDocument
    exit_code: int
    note: str | None = None  # a line for stderr: how the sweep was cut short


def device_name(name: str) -> str:
    """auto | cpu | cuda | cuda:N, as typed -> its canonical form (cuda is cuda:0). Imports nothing."""
    name = name.strip().lower()
    name = "cuda:0" if name == "cuda" else name
    if name not in ("auto", "cpu") and not (name.startswith("cuda:") and name[5:].isascii() and name[5:].isdigit()):
        raise UsageError(f"--device {name!r}: expected auto, cpu, cuda or cuda:N")
    return name


def device_info(name: str, facts: dict) -> tuple[str, dict]:
    """The device to run on and what the JSON says about it, from a child's facts (child.facts)."""
    if name == "auto":
        name = "cuda:0" if facts.get("cuda_devices") else "cpu"
    info = {"name": name, "torch": facts["torch"], "sharing_strategy": facts["sharing_strategy"]}
    if name == "cpu":
        return name, info
    count = facts.get("cuda_devices") or 0
    if int(name.partition(":")[2]) >= count:
        raise UsageError(f"--device {name}: CUDA device not available (torch sees {count})")
    info["model"] = facts["model"]
    return name, info


def ask_facts(request: Request, name: str, zygote: Zygote) -> dict:
    """child.facts in a child of the zygote: versions, devices, a --dataset's batch."""
    from . import isolate

    job = {"facts": True, "device": name, "dataset": request.dataset, "batch_size": request.batch_size}
    out = isolate.run(job, timeout=isolate.GRACE, zygote=zygote, shm_charged=False)
    if out.status != "ok" or "torch" not in out.measured:
        raise ProbeError(f"bench could not read torch's devices: {out.message or out.status}")
    if "usage_error" in out.measured:
        raise UsageError(out.measured["usage_error"])
    return out.measured


def bench(request: Request, progress: Progress) -> Outcome:
    """Runs the sweep. A stop (Ctrl-C, SIGTERM: bench.stop) after some configs ended is an Outcome with what ended
    and the stop's exit code; one before raises Stopped. Nothing of the sweep outlives this call: the zygote starts
    first (it imports torch, which this process never does) in the run's one temporary folder, and both go at the
    end, however it ends."""
    timeline = Timeline(time.time() - process_age())
    timeline.mark("command")  # Python, Click and shmdoctor's modules imported, the command line read
    name = device_name(request.device)
    if importlib.util.find_spec("torch") is None:  # located, not imported: that is the zygote's, once
        raise UsageError(f"shmdoctor bench needs torch: pip install 'shmdoctor[bench]' ({TORCH_CPU})")
    with tempfile.TemporaryDirectory(prefix="shmdoctor-bench-") as tmp, reaping_orphans(), Zygote(tmp) as zygote:
        return _bench(request, progress, zygote, name, timeline)


def _bench(request: Request, progress: Progress, zygote: Zygote, name: str, timeline: Timeline) -> Outcome:
    import psutil

    from .. import capacity
    from ..options import loader_spec
    from ..probe import local
    from ..rules_bench import judge_bench
    from . import parent, sweep
    from .workload import BenchWorkload, need, refusal

    facts_ = ask_facts(request, name, zygote)
    timeline.mark("torch_imported", zygote.ready_at)  # in the zygote, started with the command
    timeline.mark("devices_known")  # a child of the zygote asked torch (and measured a --dataset)
    name, info = device_info(name, facts_)
    cuda = name.startswith("cuda")
    if not cuda and any(request.pin_memory_device):
        raise UsageError(f"--pin-memory-device: nothing is pinned on {name}; it applies to a CUDA --device")
    spec = loader_spec(  # the synthetic batch; a --dataset's, as the child measured it
        batch_size=request.batch_size,
        num_workers=None,
        prefetch_factor=None,
        sample_bytes=request.sample_bytes,
        dataset=None,
        pin_memory=False,
        ranks=1,
    )
    if request.dataset:
        spec = replace(spec, sample_tensors=tuple(facts_["sample_tensors"]))
    measured = spec.config()
    workload = BenchWorkload(
        batch_size=request.batch_size,
        sample_bytes=measured.sample_bytes,
        batch_bytes=measured.batch_bytes,
        tensors_per_batch=measured.tensors_per_batch,
        dataset=request.dataset,
        item_latency=request.item_latency,
        step_time=request.step_time,
        batches=request.batches,
        budget=request.budget,
        device=name,
        next_epoch=request.persistent_workers is not None,
    )
    default = (True, False) if cuda else (False,)
    configs = with_persistence(
        sweep.configs(
            request.workers,
            request.prefetch,
            request.pin_memory or default,
            request.non_blocking or default,
            request.pin_memory_device,
        ),
        request.persistent_workers or (False,),
    )
    facts = local.probe()
    why_not = refusal(workload, configs, psutil.virtual_memory().available, capacity.memory_room(facts))
    if why_not:
        raise UsageError(why_not)
    available = capacity.available(facts)
    plan = Plan(
        configs,
        search=request.search,
        exhaustive=request.exhaustive,
        need=lambda c: need(workload, c).bytes,
        capacity=available,
        run_failing=request.run_failing,
    )
    results: list[Result] = []
    note, code = None, None
    timeline.mark("sweep_started")
    try:
        with (
            progress(len(configs), cuda) as done,
            closing(parent.sweep(workload, plan, zygote, memory_limited=facts.memory.limit_bytes is not None)) as each,
        ):
            pending()
            for result in each:
                results.append(result)
                if len(results) == 1:
                    timeline.mark("first_config_ended")
                done(result)
                pending()
    except Stopped as stop:  # what finished is still worth showing; the rest was stopped and cleaned up
        if not results:
            raise
        ran = sum(r.status != "skipped" for r in results)
        note, code = f"shmdoctor: {stop.word} after {ran} of {len(configs)} configs", stop.exit_code
        results += plan.skipped(lambda c: need(workload, c).bytes)
    timeline.mark("sweep_ended")
    rec = sweep.recommend(results, available)
    found = judge_bench(workload, results, facts)
    doc = BenchDocument({**document(workload, results, rec, found, facts, info), "timeline": timeline.steps})
    if code is None:
        code = ExitCode.FINDING if any(f.severity == "error" for f in found) else ExitCode.OK
    return Outcome(doc, int(code), note)
