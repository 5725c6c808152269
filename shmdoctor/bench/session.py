"""A whole bench, as the command asks for it: the device, the batch measured, the configs, the memory check, the
sweep with its progress, then the recommendation, the findings and the document. The command parses and renders.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from dataclasses import dataclass

from ..errors import UsageError
from ..exits import ExitCode
from .document import BenchDocument, document
from .model import Result
from .plan import Plan, with_persistence
from .prctl import reaping_orphans
from .stop import Stopped, deferred, pending
from .zygote import Zygote

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


@dataclass(frozen=True)
class Outcome:
    document: BenchDocument
    exit_code: int
    note: str | None = None  # a line for stderr: how the sweep was cut short


def resolve_device(name: str) -> tuple[str, dict]:
    """auto | cpu | cuda | cuda:N -> (torch device string, what the JSON says about it). Imports torch."""
    name = name.strip().lower()
    name = "cuda:0" if name == "cuda" else name
    index = name.partition(":")[2]
    if name not in ("auto", "cpu") and not (name.startswith("cuda:") and index.isdigit()):
        raise UsageError(f"--device {name!r}: expected auto, cpu, cuda or cuda:N")
    try:
        with deferred():
            import torch
            import torch.multiprocessing as mp
    except ImportError:
        raise UsageError("shmdoctor bench needs torch: pip install 'shmdoctor[bench]'") from None

    available = torch.cuda.is_available()
    if name == "auto":
        name, index = ("cuda:0", "0") if available else ("cpu", "")
    info = {"name": name, "torch": torch.__version__, "sharing_strategy": mp.get_sharing_strategy()}
    if name == "cpu":
        return name, info
    if not available or int(index) >= torch.cuda.device_count():
        raise UsageError(f"--device {name}: CUDA device not available (torch sees {torch.cuda.device_count()})")
    info["model"] = torch.cuda.get_device_name(int(index))
    return name, info


def bench(request: Request, progress: Progress) -> Outcome:
    """Runs the sweep. A stop (Ctrl-C, SIGTERM: bench.stop) after some configs ended is an Outcome with what ended
    and the stop's exit code; one before raises Stopped. Nothing of the sweep outlives this call: the zygote starts
    first (its `import torch` runs beside this process's own) in the run's one temporary folder, and both go at the
    end, however it ends."""
    with tempfile.TemporaryDirectory(prefix="shmdoctor-bench-") as tmp, reaping_orphans(), Zygote(tmp) as zygote:
        return _bench(request, progress, zygote)


def _bench(request: Request, progress: Progress, zygote: Zygote) -> Outcome:
    import psutil

    from .. import capacity
    from ..options import loader_spec
    from ..probe import local
    from ..rules_bench import judge_bench
    from . import parent, sweep
    from .workload import BenchWorkload, need, refusal

    name, info = resolve_device(request.device)
    cuda = name.startswith("cuda")
    if not cuda and any(request.pin_memory_device):
        raise UsageError(f"--pin-memory-device: nothing is pinned on {name}; it applies to a CUDA --device")
    measured = loader_spec(  # the synthetic batch, or a --dataset's, measured
        batch_size=request.batch_size,
        num_workers=None,
        prefetch_factor=None,
        sample_bytes=request.sample_bytes,
        dataset=request.dataset,
        pin_memory=False,
        ranks=1,
    ).config()
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
    try:
        with (
            progress(len(configs), cuda) as done,
            closing(parent.sweep(workload, plan, zygote, memory_limited=facts.memory.limit_bytes is not None)) as each,
        ):
            pending()
            for result in each:
                results.append(result)
                done(result)
                pending()
    except Stopped as stop:  # what finished is still worth showing; the rest was stopped and cleaned up
        if not results:
            raise
        ran = sum(r.status != "skipped" for r in results)
        note, code = f"shmdoctor: {stop.word} after {ran} of {len(configs)} configs", stop.exit_code
        results += plan.skipped(lambda c: need(workload, c).bytes)
    rec = sweep.recommend(results, available)
    found = judge_bench(workload, results, facts)
    doc = BenchDocument(document(workload, results, rec, found, facts, info))
    if code is None:
        code = ExitCode.FINDING if any(f.severity == "error" for f in found) else ExitCode.OK
    return Outcome(doc, int(code), note)
