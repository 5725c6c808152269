"""One bench config, in a child process the zygote forked: main(JOB.json, RESULT.json).

The job and the result are JSON files. This side builds the loader and times the loop; the parent (isolate.py)
watches /dev/shm and the process tree, and tells a crash or a kill from the exit status. torch is imported here.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from functools import partial
from typing import Any, Callable

from ..measure import _tensors, load_dataset
from ..model import SHM
from .sampler import shm_used
from .sweep import settled, window
from .synthetic import SyntheticDataset

MAX_BATCHES = 1000  # a cap for the settle rule, far above what settling takes


def _to_device(obj: Any, device: str, non_blocking: bool, torch: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, dict):
        return {k: _to_device(v, device, non_blocking, torch) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_device(v, device, non_blocking, torch) for v in obj]
    return obj


def _dataset(job: dict) -> Any:
    if job.get("dataset"):
        return load_dataset(job["dataset"])
    length = job["batch_size"] * ((job.get("batches") or MAX_BATCHES) + 1)
    return SyntheticDataset(length, job["sample_bytes"], job.get("item_latency") or 0.0)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _quiet(path: str, span: float, limit: float = 10.0) -> None:
    """Wait until /dev/shm has not changed for `span` seconds (at most `limit`): the batches already asked for have
    arrived."""
    last, since, end = shm_used(path), time.perf_counter(), time.perf_counter() + limit
    while time.perf_counter() < end and time.perf_counter() - since < span:
        time.sleep(0.01)
        now = shm_used(path)
        if now != last:
            last, since = now, time.perf_counter()


def _h2d_floor(nbytes: int, device: str, torch: Any) -> float:
    """Pinned host-to-device bandwidth, bytes a second: the fastest a batch of this size can reach the GPU."""
    size = max(nbytes, 64 * 2**20)
    host = torch.empty(size, dtype=torch.uint8).pin_memory()
    dev = torch.empty(size, dtype=torch.uint8, device=device)
    dev.copy_(host, non_blocking=True)  # warm-up
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        dev.copy_(host, non_blocking=True)
    end.record()
    end.synchronize()
    seconds = start.elapsed_time(end) / 1000
    del host, dev
    torch.cuda.empty_cache()
    return 5 * size / seconds


def _gate(event: Any, pids: str, worker_id: int) -> None:
    """worker_init_fn: note the worker's pid for the parent (whose segments to remove if it dies), then hold the
    workers until the iterator's own /dev/shm has been read."""
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\n")
    event.wait()


def _iterate(loader: Any, device: str | None) -> tuple[Any, bool | None]:
    """iter(loader), and whether torch said it ignores the pin_memory_device passed (torch 2.9 on: deprecated, pinned
    memory goes to the current accelerator); None when none was passed. Any other warning is still shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it = iter(loader)
    said = [w for w in caught if "pin_memory_device" in str(w.message) and "deprecated" in str(w.message)]
    for w in caught:
        if w not in said:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return it, (bool(said) if device else None)


def measure(job: dict, emit: Callable[[dict], None]) -> None:
    """Times the loop until per-batch time settles (or `batches` are timed, or the budget is spent), then emits."""
    import torch
    from torch.utils.data import DataLoader

    device, workers = job["device"], job["num_workers"]
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.set_device(device)
        torch.zeros(1, device=device)  # the CUDA context, before any timing
        start_ev, end_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    before = shm_used(SHM)  # the iterator's own pages from here: the gate's semaphores, then its queues'
    gate = multiprocessing.Event() if workers else None
    extra = (
        {}
        if not workers
        else {"prefetch_factor": job["prefetch_factor"], "worker_init_fn": partial(_gate, gate, job["pids_file"])}
    )
    if workers:
        extra["persistent_workers"] = job.get("persistent_workers", False)
    pin_device = job.get("pin_memory_device")
    if pin_device:
        extra["pin_memory_device"] = pin_device
    loader = DataLoader(
        _dataset(job), batch_size=job["batch_size"], num_workers=workers, pin_memory=job["pin_memory"], **extra
    )
    floor = _h2d_floor(job.get("batch_bytes") or 0, device, torch) if cuda and job.get("h2d_floor") else None
    step, fixed, budget = job.get("step_time") or 0.0, job.get("batches"), job["budget"]

    times: list[float] = []
    waits: list[float] = []
    copies: list[float] = []
    calls: list[float] = []
    t0 = time.perf_counter()
    it, ignored = _iterate(loader, pin_device)
    startup = time.perf_counter() - t0
    after = shm_used(SHM)  # no batch yet: the workers wait at the gate
    if gate:
        gate.set()
    overhead = None if before is None or after is None else max(0, after - before)
    first = batch_bytes = None
    stable = False
    while True:
        a = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        b = time.perf_counter()
        if batch_bytes is None:
            batch_bytes = sum(t.nbytes for t in _tensors(batch, torch))
        if cuda:
            start_ev.record()
            batch = _to_device(batch, device, job["non_blocking"], torch)
            end_ev.record()
            c = time.perf_counter()
        if step:
            time.sleep(step)  # the training step, as the seed emulates it
        if cuda:
            end_ev.synchronize()
        # The step is done with the batch: let it go before asking for the next. Held through next(), it overlaps
        # the batch a worker starts on the index next() hands out, whenever this process is descheduled in between
        # (a loaded machine): one batch over (P·W+1)·b that a loop done with its batch does not hold.
        batch = None
        end = time.perf_counter()
        if first is None:
            first = b - t0
        else:
            times.append(end - a)
            waits.append(b - a)
            if cuda:
                copies.append(start_ev.elapsed_time(end_ev) / 1000)
                calls.append(c - b)
        if fixed:
            if len(times) >= fixed:
                break
        elif settled(times, workers, waits):
            stable = True
            break
        if end - t0 > budget or len(times) >= MAX_BATCHES:
            break
    loop = time.perf_counter() - t0
    between = next_start = None
    if job.get("next_epoch") and workers:
        # The epoch is cut short here, as a loop of so many steps an epoch breaks out of it, and the batches already
        # asked for still arrive (each within about a first batch's time). Persistent workers keep them, in /dev/shm
        # or pinned, until the next epoch starts and drains them; otherwise the loop's iterator goes, its workers and
        # their batches with it (the loader keeps only a persistent iterator).
        batch = None
        _quiet(SHM, first or 0.1)
        del it
        now = shm_used(SHM)
        between = None if now is None or before is None else max(0, now - before)
        a = time.perf_counter()
        it, _ = _iterate(loader, pin_device)
        next(it)
        next_start = time.perf_counter() - a
    # Figures over the settled window (the last two), or over every timed batch when a count was asked for.
    span = len(times) if fixed or not stable else 2 * window(workers)
    emit(
        {
            "batches": len(times),
            "stable": stable or bool(fixed and len(times) >= fixed),
            "batch_seconds": _mean(times[-span:]),
            "data_wait_seconds": _mean(waits[-span:]),
            "h2d_seconds": _mean(copies[-span:]) if cuda else None,
            "to_call_seconds": _mean(calls[-span:]) if cuda else None,
            "batch_bytes": batch_bytes,
            "worker_startup_seconds": startup,
            "first_batch_seconds": first,
            "loop_seconds": loop,
            "loader_overhead_bytes": overhead,
            "next_epoch_start_seconds": next_start,
            "between_epochs_shm_bytes": between,
            "h2d_pinned_bytes_per_second": floor,
            "pin_memory_device_ignored": ignored,
        }
    )


def facts(job: dict) -> dict:
    """What the parent (which never imports torch) needs before a sweep: torch's version and sharing strategy, the
    CUDA devices where one may be used (the model of the one asked for), and a --dataset's batch measured."""
    import torch
    import torch.multiprocessing as mp

    out: dict[str, Any] = {"torch": torch.__version__, "sharing_strategy": mp.get_sharing_strategy()}
    device = job["device"]
    if device != "cpu":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = int(device.partition(":")[2] or 0)
        out.update(cuda_devices=count, model=torch.cuda.get_device_name(index) if index < count else None)
    if job.get("dataset"):
        from ..errors import UsageError
        from ..measure import load_dataset, sample_tensors

        try:
            out["sample_tensors"] = sample_tensors(load_dataset(job["dataset"]), job["batch_size"], spec=job["dataset"])
        except UsageError as e:
            out["usage_error"] = str(e)
    return out


def main(argv: list[str]) -> int:
    """Emitting the result ends the process at once: the parent then ends the workers (SIGKILL to the process group)
    and removes what they leave, so a loader's shutdown (up to seconds when a worker died) is never waited for."""
    job_path, result_path = argv

    def emit(result: dict, code: int = 0) -> None:
        tmp = result_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, result_path)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    with open(job_path) as f:
        job = json.load(f)
    try:
        if job.get("facts"):
            emit(facts(job))
        measure(job, emit)
    except BaseException as e:  # the parent classifies it: every end of a config is a result
        text = str(e) if type(e).__name__ in str(e) else f"{type(e).__name__}: {e}"
        emit({"error": text, "traceback": traceback.format_exc(limit=-3)}, 1)
    emit({"error": "the loop ended without a result"}, 1)
    return 1
